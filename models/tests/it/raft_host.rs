//! A test host for the Raft core: one [`Raft<u64>`] per node of a world, ticked every 100 ms
//! of the node's MONO clock, proposing commands and issuing reads whenever it believes it
//! leads, applying committed entries to a state machine (the list of applied commands), and
//! recording what the safety checker needs. Plus random fault schedules drawn from a seed.

use lockstep_models::raft::safety::{self, RaftEvent, Summary, Violation};
use lockstep_models::raft::{Durable, Entry, EntryData, Outbox, Raft, RaftConfig, RaftMsg, Role};
use lockstep_sim::{
    ClockKind, Distribution, Dur, EnvOf, Fault, LinkConfig, NodeConfig, NodeId, Outcome,
    PartitionMode, Process, Rng, ScheduledFault, Shape, Time, TimerId, When, World, WorldConfig,
};

/// etcd's `TickMs`.
pub(crate) const TICK: Dur = Dur::from_millis(100);

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum HostTimer {
    Tick,
    Propose,
    Read,
}

/// How busy the hosts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    /// A leader proposes a command every `lo..=hi`.
    pub(crate) propose: Option<(Dur, Dur)>,
    /// A leader issues a read every `lo..=hi`.
    pub(crate) read: Option<(Dur, Dur)>,
}

impl Load {
    pub(crate) const BUSY: Load = Load {
        propose: Some((Dur::from_millis(50), Dur::from_millis(150))),
        read: Some((Dur::from_millis(100), Dur::from_millis(300))),
    };
}

/// One node.
#[derive(Clone, Debug)]
pub(crate) struct Host {
    config: RaftConfig,
    load: Load,
    raft: Option<Raft<u64>>,
    /// What survives while the node is down.
    kept: Durable<u64>,
    incarnation: u64,
    proposals: u64,
    reads: u64,
    /// The state machine: the commands applied, in order (rebuilt by replay after a restart).
    pub(crate) applied: Vec<u64>,
}

impl Host {
    pub(crate) fn new(config: RaftConfig, load: Load) -> Host {
        Host {
            config,
            load,
            raft: None,
            kept: Durable::new(),
            incarnation: 0,
            proposals: 0,
            reads: 0,
            applied: Vec::new(),
        }
    }

    /// The node's Raft, `None` while it is down.
    pub(crate) fn raft(&self) -> Option<&Raft<u64>> {
        self.raft.as_ref()
    }

    /// The node's log, up or down.
    pub(crate) fn log(&self) -> &[Entry<u64>] {
        match &self.raft {
            Some(r) => &r.durable().log,
            None => &self.kept.log,
        }
    }

    fn start(&mut self, ctx: &mut impl EnvOf<Host>) {
        let raft = Raft::new(self.config.clone(), self.kept.clone(), ctx.rng());
        self.raft = Some(raft);
        // Real nodes do not tick in phase: the first tick comes after a random part of one.
        let first = Dur::from_nanos(ctx.rng().between(1, TICK.as_nanos()));
        ctx.set_timer(ClockKind::Mono, first, HostTimer::Tick);
        if let Some((lo, hi)) = self.load.propose {
            let d = between(ctx.rng(), lo, hi);
            ctx.set_timer(ClockKind::Mono, d, HostTimer::Propose);
        }
        if let Some((lo, hi)) = self.load.read {
            let d = between(ctx.rng(), lo, hi);
            ctx.set_timer(ClockKind::Mono, d, HostTimer::Read);
        }
    }

    /// Sends, records and applies what one call produced.
    fn handle(&mut self, ctx: &mut impl EnvOf<Host>, out: Outbox<u64>) {
        let term = self.raft.as_ref().expect("up").term();
        for event in RaftEvent::from_outbox(term, &out) {
            ctx.record(event);
        }
        for e in out.committed {
            match e.data {
                EntryData::Command(c) => self.applied.push(*c),
                EntryData::Empty => {}
            }
        }
        let voted = out
            .msgs
            .iter()
            .any(|(_, m)| matches!(m, RaftMsg::VoteResp { reject: false, .. }));
        for (to, msg) in out.msgs {
            ctx.send(to, msg);
        }
        if voted {
            // The vote is durable by now: a crash right here must not let the node vote
            // again in the same term.
            ctx.mark("voted");
        }
    }

    fn propose(&mut self, ctx: &mut impl EnvOf<Host>) {
        let raft = self.raft.as_mut().expect("up");
        if raft.role() != Role::Leader {
            return;
        }
        self.proposals += 1;
        let cmd = (u64::from(self.config.me.0) + 1) << 48 | self.incarnation << 32 | self.proposals;
        let mut out = Outbox::default();
        raft.propose(cmd, &mut out).expect("leads");
        self.handle(ctx, out);
    }

    fn read(&mut self, ctx: &mut impl EnvOf<Host>) {
        let raft = self.raft.as_mut().expect("up");
        if raft.role() != Role::Leader {
            return;
        }
        self.reads += 1;
        let read_ctx = self.incarnation << 32 | self.reads;
        ctx.record(RaftEvent::ReadIssued { ctx: read_ctx });
        let mut out = Outbox::default();
        raft.read_index(read_ctx, &mut out).expect("leads");
        self.handle(ctx, out);
    }

    fn rearm(&mut self, ctx: &mut impl EnvOf<Host>, timer: HostTimer) {
        let range = match timer {
            HostTimer::Tick => Some((TICK, TICK)),
            HostTimer::Propose => self.load.propose,
            HostTimer::Read => self.load.read,
        };
        if let Some((lo, hi)) = range {
            let d = between(ctx.rng(), lo, hi);
            ctx.set_timer(ClockKind::Mono, d, timer);
        }
    }
}

fn between(rng: &mut Rng, lo: Dur, hi: Dur) -> Dur {
    Dur::from_nanos(rng.between(lo.as_nanos(), hi.as_nanos()))
}

impl Process for Host {
    type Msg = RaftMsg<u64>;
    type Timer = HostTimer;
    type Event = RaftEvent<u64>;
    type Observation = ();

    fn on_start(&mut self, ctx: &mut impl EnvOf<Host>) {
        self.start(ctx);
    }

    fn on_message(&mut self, ctx: &mut impl EnvOf<Host>, from: NodeId, msg: RaftMsg<u64>) {
        let mut out = Outbox::default();
        let raft = self.raft.as_mut().expect("up");
        raft.step(from, msg, ctx.rng(), &mut out);
        self.handle(ctx, out);
    }

    fn on_timer(&mut self, ctx: &mut impl EnvOf<Host>, _id: TimerId, timer: HostTimer) {
        match timer {
            HostTimer::Tick => {
                let mut out = Outbox::default();
                let raft = self.raft.as_mut().expect("up");
                raft.tick(ctx.rng(), &mut out);
                self.handle(ctx, out);
            }
            HostTimer::Propose => self.propose(ctx),
            HostTimer::Read => self.read(ctx),
        }
        self.rearm(ctx, timer);
    }

    fn on_crash(&mut self) {
        self.kept = self.raft.take().expect("up").into_durable();
        self.applied.clear();
    }

    fn on_restart(&mut self, ctx: &mut impl EnvOf<Host>) {
        self.incarnation += 1;
        ctx.record(RaftEvent::Restarted);
        self.start(ctx);
    }
}

/// The hosts of an `n`-node cluster with etcd's settings.
pub(crate) fn hosts(n: u32, load: Load, tweak: impl Fn(&mut RaftConfig)) -> Vec<Host> {
    let peers: Vec<NodeId> = (0..n).map(NodeId).collect();
    (0..n)
        .map(|i| {
            let mut config = RaftConfig::with_defaults(peers.clone(), NodeId(i));
            tweak(&mut config);
            Host::new(config, load)
        })
        .collect()
}

/// Checks a finished world's safety.
pub(crate) fn check(world: &World<Host>) -> Result<Summary, Vec<Violation>> {
    let n = world.names().len();
    let logs: Vec<(NodeId, &[Entry<u64>])> = (0..n as u32)
        .map(|i| (NodeId(i), world.process(NodeId(i)).log()))
        .collect();
    safety::check(world.history(), &logs)
}

/// The leader every up node agrees on, at the highest term, if there is one.
pub(crate) fn agreed_leader(world: &World<Host>) -> Option<(NodeId, u64)> {
    let n = world.names().len() as u32;
    let rafts: Vec<&Raft<u64>> = (0..n)
        .filter_map(|i| world.process(NodeId(i)).raft())
        .collect();
    let first = rafts.first()?;
    let (leader, term) = (first.leader()?, first.term());
    let agreed = rafts
        .iter()
        .all(|r| r.leader() == Some(leader) && r.term() == term);
    let leads = world.process(leader).raft()?.role() == Role::Leader;
    (agreed && leads && rafts.len() == n as usize).then_some((leader, term))
}

pub(crate) fn ms(v: u64) -> Dur {
    Dur::from_millis(v)
}

fn at(t: Dur, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(When::At(Time::from_nanos(t.as_nanos())), fault)
}

/// When faults stop and the quiet tail begins.
pub(crate) const QUIET: Dur = Dur::from_secs(12);
/// The end of a random-fault run. The quiet tail is long because the links are TCP: a
/// connection stalled before the heal gets through only at its next retransmission (up to
/// one back-off interval later, several seconds after a long cut), and each retransmission
/// the tail's link loss takes doubles the wait again.
pub(crate) const END: Dur = Dur::from_secs(45);

/// A world of `n` nodes with a random network and fault schedule drawn from `seed`: link
/// latency (uniform, exponential or a Pareto long tail), loss and duplication; partitions of
/// every shape in drop and hold mode, crashes with restart, pauses, clock drift from
/// ±500 ppm up to ±25 %, wall-clock steps and delayed links, until [`QUIET`]; then every
/// partition heals, every node resumes and restarts, and the run goes on quietly to [`END`].
pub(crate) fn random_world(seed: u64, n: u32, hosts: Vec<Host>) -> World<Host> {
    let mut r = Rng::fork(seed, "schedule");
    let nodes: Vec<NodeConfig> = (0..n)
        .map(|i| NodeConfig {
            drift_ppm: r.between(0, 1_000) as i64 - 500,
            ..NodeConfig::named(format!("n{i}"))
        })
        .collect();
    let mut cfg = WorldConfig::new(seed, Time::from_nanos(END.as_nanos()), nodes);
    cfg.max_events = 2_000_000;
    cfg.link = random_link(&mut r);
    let count = r.between(3, 12);
    for _ in 0..count {
        let start = ms(r.between(300, QUIET.as_millis() - 500));
        let left = QUIET.saturating_sub(start);
        let fault = random_fault(&mut r, n, left);
        cfg.faults.push(at(start, fault));
    }
    // Crash a voter right after it grants a vote, and bring it back quickly.
    for _ in 0..r.below(4) {
        let node = NodeId(r.below(u64::from(n)) as u32);
        cfg.faults.push(ScheduledFault {
            when: When::OnMark {
                node,
                mark: "voted".into(),
                occurrence: r.between(1, 4) as u32,
                before: None,
            },
            fault: Fault::Crash {
                node,
                restart_after: Some(ms(r.between(1, 100))),
            },
            role: None,
        });
    }
    cfg.faults.push(at(QUIET, Fault::Heal));
    for i in 0..n {
        cfg.faults
            .push(at(QUIET, Fault::Resume { node: NodeId(i) }));
        cfg.faults
            .push(at(QUIET, Fault::Restart { node: NodeId(i) }));
    }
    World::new(cfg, hosts)
}

pub(crate) fn random_link(r: &mut Rng) -> LinkConfig {
    let latency = match r.below(3) {
        0 => Distribution::Uniform {
            lo: ms(1),
            hi: ms(5),
        },
        1 => Distribution::Exponential {
            min: ms(1),
            mean: ms(5),
        },
        _ => Distribution::Pareto {
            min: ms(1),
            alpha_milli: 1_200,
            max: ms(1_000),
        },
    };
    let ppm = |r: &mut Rng| [0, 0, 1_000, 10_000, 50_000][r.below(5) as usize];
    LinkConfig {
        latency,
        loss_ppm: ppm(r),
        duplicate_ppm: ppm(r),
    }
}

fn random_nodes(r: &mut Rng, n: u32) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = (0..n)
        .map(NodeId)
        .filter(|_| r.chance_ppm(500_000))
        .collect();
    if v.is_empty() {
        v.push(NodeId(r.below(u64::from(n)) as u32));
    }
    v
}

/// One fault that ends (or whose effect a tail fault ends) within `left`.
pub(crate) fn random_fault(r: &mut Rng, n: u32, left: Dur) -> Fault {
    let node = NodeId(r.below(u64::from(n)) as u32);
    let all: Vec<NodeId> = (0..n).map(NodeId).collect();
    let dur = |r: &mut Rng, lo: u64, hi: u64| Some(ms(r.between(lo, hi)).min(left));
    match r.below(8) {
        0 | 1 => {
            let shape = match r.below(6) {
                0 => Shape::Isolate { node },
                1 => {
                    let a = random_nodes(r, n);
                    let b: Vec<NodeId> = all.iter().copied().filter(|x| !a.contains(x)).collect();
                    if b.is_empty() {
                        Shape::Isolate { node }
                    } else {
                        Shape::Split { groups: vec![a, b] }
                    }
                }
                2 => Shape::OneWay {
                    from: random_nodes(r, n),
                    to: random_nodes(r, n),
                },
                3 => Shape::MajorityMinority { nodes: all },
                4 => Shape::Bridge { nodes: all },
                _ => Shape::MajoritiesRing { nodes: all },
            };
            let mode = if r.chance_ppm(500_000) {
                PartitionMode::Drop
            } else {
                PartitionMode::Hold
            };
            Fault::Partition {
                shape,
                mode,
                duration: dur(r, 200, 4_000),
            }
        }
        2 => Fault::Crash {
            node,
            restart_after: Some(ms(r.between(100, 3_000))),
        },
        3 => Fault::Pause {
            node,
            duration: dur(r, 50, 3_000),
        },
        4 => {
            let drift_ppm = if r.chance_ppm(700_000) {
                r.between(0, 1_000) as i64 - 500
            } else {
                r.between(0, 500_000) as i64 - 250_000
            };
            Fault::ClockDrift { node, drift_ppm }
        }
        5 => Fault::ClockStep {
            node,
            delta_ns: r.between(0, 20_000_000_000) as i64 - 10_000_000_000,
        },
        _ => Fault::Delay {
            from: random_nodes(r, n),
            to: random_nodes(r, n),
            extra: ms(r.between(10, 1_500)),
            duration: dur(r, 200, 3_000),
        },
    }
}

/// Runs a world to its end; it must not run out of events.
pub(crate) fn run(world: &mut World<Host>) {
    assert_eq!(world.run(), Outcome::Completed, "the run ran out of events");
}

/// The node that leads the highest term, if any.
pub(crate) fn current_leader(world: &World<Host>) -> Option<NodeId> {
    let n = world.names().len() as u32;
    (0..n)
        .filter_map(|i| world.process(NodeId(i)).raft().map(|r| (r, NodeId(i))))
        .filter(|(r, _)| r.role() == Role::Leader)
        .max_by_key(|(r, _)| r.term())
        .map(|(_, id)| id)
}

/// Runs a world built by [`random_world`] to its end with a Jepsen-style nemesis on top of
/// its schedule: every 0.2-1.5 s until the quiet tail, half the time, it looks up the
/// current leader and crashes, pauses, isolates, slows or cuts it off (one way) at once.
pub(crate) fn run_with_nemesis(world: &mut World<Host>, seed: u64) {
    let mut r = Rng::fork(seed, "nemesis");
    let n = world.names().len() as u32;
    let mut t = ms(r.between(300, 1_500));
    while t + ms(500) < QUIET {
        assert_eq!(
            world.run_until(Time::from_nanos(t.as_nanos())),
            Outcome::Completed
        );
        let leader = current_leader(world);
        if let (true, Some(leader)) = (r.chance_ppm(500_000), leader) {
            let fault = leader_fault(&mut r, n, leader, QUIET.saturating_sub(t));
            world.schedule(at(t, fault));
        }
        t = t + ms(r.between(200, 1_500));
    }
    run(world);
}

pub(crate) fn leader_fault(r: &mut Rng, n: u32, leader: NodeId, left: Dur) -> Fault {
    let others: Vec<NodeId> = (0..n).map(NodeId).filter(|&x| x != leader).collect();
    let dur = |r: &mut Rng, lo: u64, hi: u64| Some(ms(r.between(lo, hi)).min(left));
    match r.below(6) {
        0 => Fault::Crash {
            node: leader,
            restart_after: Some(ms(r.between(100, 3_000))),
        },
        1 => Fault::Pause {
            node: leader,
            duration: dur(r, 500, 3_000),
        },
        2 => Fault::Partition {
            shape: Shape::Isolate { node: leader },
            mode: if r.chance_ppm(500_000) {
                PartitionMode::Drop
            } else {
                PartitionMode::Hold
            },
            duration: dur(r, 500, 4_000),
        },
        3 => Fault::Partition {
            shape: Shape::OneWay {
                from: vec![leader],
                to: others,
            },
            mode: PartitionMode::Drop,
            duration: dur(r, 500, 4_000),
        },
        4 => Fault::ClockDrift {
            node: leader,
            drift_ppm: -(r.between(0, 250_000) as i64),
        },
        _ => Fault::Delay {
            from: vec![leader],
            to: others,
            extra: ms(r.between(200, 1_500)),
            duration: dur(r, 500, 3_000),
        },
    }
}
