//! Chaos profiles: a Jepsen-style nemesis whose whole fault schedule is drawn from the seed.
//!
//! A scenario's `[chaos]` section resolves to a [`Chaos`]: rates, weights and ranges of the
//! fault kinds, the nodes they may strike and the marks where a fault lands at the worst
//! moment. [`Chaos::generate`] turns a seed into explicit [`ScheduledFault`]s before the run
//! starts, from its own stream (`Rng::fork(seed, "chaos")`), so the world's other streams do
//! not depend on the profile and a schedule written out as `[[fault]]` entries replays the
//! same run. Every fault the profile draws is over before the *quiet tail*: from
//! [`Chaos::quiet_from`] nothing is in force, and a live lock must be granted again within
//! [`Chaos::liveness`].
//!
//! The ranges follow published fault models (docs/scenarios.md, `[chaos]`): Jepsen's clock
//! nemesis (`jepsen.nemesis.time`: bumps of ±1.5^(6..31) ms, strobes), ntpd's slew of 500 ppm,
//! crystal drift, TigerBeetle's VOPR network ranges, and GC pauses with a Pareto tail.

use lockstep_models::Role;
use lockstep_models::family::MarkSite;
use lockstep_models::system::Layout;
use lockstep_sim::rng::{det_exp, det_ln};
use lockstep_sim::{
    Distribution, Dur, Fault, NodeId, PartitionMode, Rng, ScheduledFault, Shape, Time, When,
};

/// A resolved chaos profile: everything [`Chaos::generate`] needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chaos {
    /// The named profile the settings start from.
    pub profile: String,
    /// No fault before this true time (the system starts up, elects, grants once).
    pub start: Time,
    /// From this true time no fault is in force: the quiet tail.
    pub quiet_from: Time,
    /// Within this long of `quiet_from` the lock must be granted again.
    pub liveness: Dur,
    /// The mean time between two faults (their arrivals are a Poisson process).
    pub mean_gap: Dur,
    /// The share of faults placed at a mark (the worst moment) rather than at a time, in ppm.
    pub on_mark_ppm: u32,
    /// Highest occurrence of a mark a fault waits for (drawn uniformly from 1).
    pub max_occurrence: u32,
    /// Relative weights of the fault kinds; zero turns a kind off.
    pub weights: Weights,
    /// Relative weights of the kinds of clock fault.
    pub clock_kinds: ClockKinds,
    /// Length of a process pause (GC-shaped: mostly short, a long tail).
    pub pause: Distribution,
    /// The share of pauses that freeze the whole host (a paused VM) rather than stop the
    /// process (GC, SIGSTOP), in ppm.
    pub freeze_ppm: u32,
    /// Length of a partition.
    pub partition: Distribution,
    /// The share of partitions that hold messages until the heal (the idealised form of TCP's
    /// retransmission) rather than drop packets, in ppm.
    pub hold_ppm: u32,
    /// Time from a crash to the restart.
    pub restart: Distribution,
    /// Cap on the size of a wall-clock step or slew.
    pub max_step: Dur,
    /// Bound on the drift a clock fault sets, in ppm either way.
    pub max_drift_ppm: i64,
    /// The rate of a slew, in ppm (ntpd 500).
    pub slew_rate_ppm: u32,
    /// Extra one-way delay of a slow link.
    pub delay: Distribution,
    /// How long a link stays slow or lossy.
    pub slow_for: Distribution,
    /// Bound on the extra loss of a lossy link, in ppm (VOPR: up to 30 %).
    pub max_loss_ppm: u32,
    /// Bound on the extra duplication of a lossy link, in ppm (VOPR: up to 50 %).
    pub max_duplicate_ppm: u32,
    /// Who the faults may strike.
    pub targets: Targets,
    /// The most faults a schedule holds: drawing stops there. Each fault costs the run at
    /// least an event, so the scenario's `max_events` bounds it (and its memory budget: a
    /// longer schedule would be over it before the first event); a huge run's schedule
    /// stays small, and a schedule within the bound is drawn exactly as without it.
    pub max_faults: u64,
}

/// Relative weights of the fault kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights {
    /// Partitions of every shape.
    pub partition: u32,
    /// Process pauses.
    pub pause: u32,
    /// Crashes, each with a restart.
    pub crash: u32,
    /// Clock steps, slews, strobes and drift changes.
    pub clock: u32,
    /// Slow links and lossy links.
    pub network: u32,
}

impl Weights {
    fn total(&self) -> u64 {
        u64::from(self.partition)
            + u64::from(self.pause)
            + u64::from(self.crash)
            + u64::from(self.clock)
            + u64::from(self.network)
    }
}

/// Relative weights of the kinds of clock fault (the profile's: 2, 1, 1, 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockKinds {
    /// Wall-clock steps (Jepsen's bumps).
    pub step: u32,
    /// Wall-clock slews at the profile's rate (ntpd).
    pub slew: u32,
    /// Strobes: steps away and back at a period.
    pub strobe: u32,
    /// Changes of a clock's drift.
    pub drift: u32,
}

impl ClockKinds {
    /// The sum of the weights.
    pub fn total(&self) -> u64 {
        u64::from(self.step) + u64::from(self.slew) + u64::from(self.strobe) + u64::from(self.drift)
    }

    /// Which kind a draw below [`ClockKinds::total`] falls on: 0 step, 1 slew, 2 strobe, 3
    /// drift. With the profile's weights this is the draw below 5 it has always been.
    fn of(&self, mut x: u64) -> u8 {
        for (i, w) in [self.step, self.slew, self.strobe, self.drift]
            .into_iter()
            .enumerate()
        {
            if x < u64::from(w) {
                return i as u8;
            }
            x -= u64::from(w);
        }
        3
    }
}

/// The nodes of a system as the nemesis sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// Workload clients.
    pub clients: Vec<NodeId>,
    /// Lock servers.
    pub servers: Vec<NodeId>,
    /// Coordinators beside the servers (a family's sentinels).
    pub coordinators: Vec<NodeId>,
    /// The storage node, when it is a node of its own. It is partitioned and slowed, never
    /// crashed, paused or clock-faulted: it is the checker's arbiter, not a system under test.
    pub storage: Option<NodeId>,
    /// The marks the family's nodes reach (`lockstep_models::System::marks`).
    pub marks: Vec<(&'static str, MarkSite)>,
}

impl Targets {
    /// The nodes of `layout` by role, and the marks its nodes reach.
    pub fn of(layout: &Layout, marks: Vec<(&'static str, MarkSite)>) -> Targets {
        Targets {
            clients: layout.with(|r| r == Role::Client),
            servers: layout.with(|r| r == Role::Server),
            coordinators: layout.with(|r| matches!(r, Role::Coordinator { .. })),
            storage: layout.with(|r| r == Role::Storage).first().copied(),
            marks,
        }
    }

    /// Nodes that may crash, pause or have their clocks disturbed: all but the storage.
    fn processes(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = self
            .servers
            .iter()
            .chain(&self.coordinators)
            .chain(&self.clients)
            .copied()
            .collect();
        v.sort();
        v
    }

    /// Every node.
    fn all(&self) -> Vec<NodeId> {
        let mut v = self.processes();
        v.extend(self.storage);
        v.sort();
        v
    }
}

/// What kind of fault an arrival is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Partition,
    Pause,
    Crash,
    Clock,
    Network,
}

impl Chaos {
    /// The fault schedule of the run with `seed`.
    pub fn generate(&self, seed: u64) -> Vec<ScheduledFault> {
        let mut rng = Rng::fork(seed, "chaos");
        let mut faults = Vec::new();
        if self.weights.total() == 0 || self.quiet_from <= self.start {
            return faults;
        }
        let gap = Distribution::Exponential {
            min: Dur::ZERO,
            mean: self.mean_gap,
        };
        let mut t = self.start.saturating_add(gap.sample(&mut rng));
        while t < self.quiet_from && (faults.len() as u64) < self.max_faults {
            let kind = self.kind(&mut rng);
            // Room left before the quiet tail; every fault ends within it.
            let room = self.quiet_from - t;
            let trigger = rng
                .chance_ppm(self.on_mark_ppm)
                .then(|| self.trigger(&mut rng))
                .flatten();
            let fault = self.fault(kind, trigger.map(|(node, _, _)| node), &mut rng);
            let fault = clip(fault, room);
            let when = match trigger {
                // A marked fault lapses when it could no longer end before the quiet tail.
                Some((node, mark, occurrence)) => When::OnMark {
                    node,
                    mark: mark.to_string(),
                    occurrence,
                    before: Some(
                        Time::ZERO
                            + (self.quiet_from - Time::ZERO).saturating_sub(in_force(&fault)),
                    ),
                },
                None => When::At(t),
            };
            faults.push(ScheduledFault {
                when,
                fault,
                role: None,
            });
            t = t.saturating_add(gap.sample(&mut rng).max(Dur::from_nanos(1)));
        }
        faults
    }

    fn kind(&self, rng: &mut Rng) -> Kind {
        let w = &self.weights;
        let mut x = rng.below(self.weights.total());
        for (weight, kind) in [
            (w.partition, Kind::Partition),
            (w.pause, Kind::Pause),
            (w.crash, Kind::Crash),
            (w.clock, Kind::Clock),
            (w.network, Kind::Network),
        ] {
            if x < u64::from(weight) {
                return kind;
            }
            x -= u64::from(weight);
        }
        unreachable!("x < total weight")
    }

    /// A mark to wait for: the node that reaches it, its name and which occurrence.
    fn trigger(&self, rng: &mut Rng) -> Option<(NodeId, &'static str, u32)> {
        let t = &self.targets;
        let (mark, site) = *pick(rng, &t.marks)?;
        let node = *pick(
            rng,
            match site {
                MarkSite::Client => &t.clients,
                MarkSite::Server => &t.servers,
            },
        )?;
        let occurrence = rng.between(1, u64::from(self.max_occurrence.max(1))) as u32;
        Some((node, mark, occurrence))
    }

    /// A fault of `kind`, aimed at `at` when a mark triggers it (that node is the one at its
    /// worst moment).
    fn fault(&self, kind: Kind, at: Option<NodeId>, rng: &mut Rng) -> Fault {
        let t = &self.targets;
        let processes = t.processes();
        let process = |rng: &mut Rng| at.unwrap_or_else(|| *pick(rng, &processes).expect("nodes"));
        match kind {
            Kind::Pause => {
                let d = self.pause.sample(rng);
                let node = process(rng);
                let duration = Some(d);
                if rng.chance_ppm(self.freeze_ppm) {
                    Fault::Freeze { node, duration }
                } else {
                    Fault::Pause { node, duration }
                }
            }
            Kind::Crash => {
                let d = self.restart.sample(rng);
                let node = process(rng);
                Fault::Crash {
                    node,
                    restart_after: Some(d),
                }
            }
            Kind::Partition => {
                let d = self.partition.sample(rng).max(Dur::from_millis(1));
                let mode = if rng.chance_ppm(self.hold_ppm) {
                    PartitionMode::Hold
                } else {
                    PartitionMode::Drop
                };
                let shape = self.shape(at, rng);
                Fault::Partition {
                    shape,
                    mode,
                    duration: Some(d),
                }
            }
            Kind::Clock => {
                let node = process(rng);
                match self.clock_kinds.of(rng.below(self.clock_kinds.total())) {
                    0 => Fault::ClockStep {
                        node,
                        delta_ns: self.bump(rng),
                    },
                    1 => {
                        let delta_ns = self.bump(rng);
                        Fault::ClockSlew {
                            node,
                            delta_ns,
                            rate_ppm: self.slew_rate_ppm,
                        }
                    }
                    2 => {
                        // Jepsen's strobe: delta 2^(2..18) ms, period 2^(0..10) ms, for up
                        // to 32 s.
                        let delta = Dur::from_millis(1 << rng.between(2, 18)).min(self.max_step);
                        let delta_ns = i64::try_from(delta.as_nanos().max(1)).unwrap_or(i64::MAX);
                        let period = Dur::from_millis(1 << rng.between(0, 10));
                        let duration = Dur::from_nanos(rng.between(1, 32_000_000_000));
                        Fault::ClockStrobe {
                            node,
                            delta_ns: if rng.below(2) == 0 {
                                delta_ns
                            } else {
                                -delta_ns
                            },
                            period,
                            duration,
                        }
                    }
                    _ => {
                        let b = self.max_drift_ppm.unsigned_abs();
                        let drift_ppm = rng.between(0, 2 * b) as i64 - b as i64;
                        Fault::ClockDrift { node, drift_ppm }
                    }
                }
            }
            Kind::Network => {
                let all = t.all();
                let node = at.unwrap_or_else(|| *pick(rng, &all).expect("nodes"));
                let others: Vec<NodeId> = all.iter().copied().filter(|&n| n != node).collect();
                let d = self.slow_for.sample(rng).max(Dur::from_millis(1));
                let (from, to) = if rng.below(2) == 0 {
                    (vec![node], others)
                } else {
                    (others, vec![node])
                };
                if rng.below(2) == 0 {
                    Fault::Delay {
                        from,
                        to,
                        extra: self.delay.sample(rng),
                        duration: Some(d),
                    }
                } else {
                    // At least one of the two, so the fault changes something.
                    let loss_ppm = rng.between(0, u64::from(self.max_loss_ppm)) as u32;
                    let duplicate_ppm = rng.between(0, u64::from(self.max_duplicate_ppm)) as u32;
                    Fault::Degrade {
                        from,
                        to,
                        loss_ppm: if loss_ppm == 0 && duplicate_ppm == 0 {
                            1
                        } else {
                            loss_ppm
                        },
                        duplicate_ppm,
                        duration: Some(d),
                    }
                }
            }
        }
    }

    /// A partition shape, after Jepsen's: one node alone, a client cut from the servers, a
    /// one-way cut, a random majority/minority, a bridge or a ring of majorities over the
    /// servers.
    fn shape(&self, at: Option<NodeId>, rng: &mut Rng) -> Shape {
        let t = &self.targets;
        let all = t.all();
        let node = at.unwrap_or_else(|| *pick(rng, &all).expect("nodes"));
        let cluster: Vec<NodeId> = if t.servers.len() >= 3 {
            t.servers.clone()
        } else {
            t.processes()
        };
        let mut choice = rng.below(6);
        if cluster.len() < 3 && choice >= 3 {
            choice = 0;
        }
        match choice {
            0 => Shape::Isolate { node },
            1 => {
                let rest: Vec<NodeId> = all.iter().copied().filter(|&n| n != node).collect();
                if rng.below(2) == 0 {
                    Shape::OneWay {
                        from: vec![node],
                        to: rest,
                    }
                } else {
                    Shape::OneWay {
                        from: rest,
                        to: vec![node],
                    }
                }
            }
            2 => {
                let servers: Vec<NodeId> = t
                    .servers
                    .iter()
                    .chain(&t.coordinators)
                    .copied()
                    .filter(|&n| n != node)
                    .collect();
                if servers.is_empty() {
                    Shape::Isolate { node }
                } else {
                    Shape::Split {
                        groups: vec![vec![node], servers],
                    }
                }
            }
            3 => Shape::MajorityMinority { nodes: cluster },
            4 => Shape::Bridge { nodes: cluster },
            _ => Shape::MajoritiesRing { nodes: cluster },
        }
    }

    /// A Jepsen clock bump: ±1.5^u ms with u uniform in [6, 31] (11 ms to 288 s), capped at
    /// `max_step`.
    fn bump(&self, rng: &mut Rng) -> i64 {
        let u = 6.0 + 25.0 * rng.unit_open0();
        let ms = det_exp(u * det_ln(1.5));
        let ns = ((ms * 1e6) as u64).min(self.max_step.as_nanos()).max(1);
        let ns = i64::try_from(ns).unwrap_or(i64::MAX);
        if rng.below(2) == 0 { ns } else { -ns }
    }
}

/// How long a fault stays in force once applied. A drift change is a new rate, not an
/// episode: it stays, like a bad crystal.
fn in_force(fault: &Fault) -> Dur {
    match fault {
        Fault::Pause { duration, .. }
        | Fault::Freeze { duration, .. }
        | Fault::Partition { duration, .. }
        | Fault::Delay { duration, .. }
        | Fault::Degrade { duration, .. } => duration.unwrap_or(Dur::MAX),
        Fault::ClockStrobe { duration, .. } => *duration,
        Fault::Crash { restart_after, .. } => restart_after.unwrap_or(Dur::MAX),
        // The kill at the end of the grace is for good.
        Fault::Terminate { .. } => Dur::MAX,
        Fault::ClockSlew {
            delta_ns, rate_ppm, ..
        } => {
            let ns =
                u128::from(delta_ns.unsigned_abs()) * 1_000_000 / u128::from((*rate_ppm).max(1));
            Dur::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
        }
        _ => Dur::ZERO,
    }
}

/// Caps a fault's own length at `room`, so it is over before the quiet tail.
fn clip(fault: Fault, room: Dur) -> Fault {
    let cap = |d: Dur| d.min(room);
    match fault {
        Fault::Pause {
            node,
            duration: Some(d),
        } => Fault::Pause {
            node,
            duration: Some(cap(d)),
        },
        Fault::Freeze {
            node,
            duration: Some(d),
        } => Fault::Freeze {
            node,
            duration: Some(cap(d)),
        },
        Fault::Crash {
            node,
            restart_after: Some(d),
        } => Fault::Crash {
            node,
            restart_after: Some(cap(d)),
        },
        Fault::Partition {
            shape,
            mode,
            duration: Some(d),
        } => Fault::Partition {
            shape,
            mode,
            duration: Some(cap(d).max(Dur::from_nanos(1))),
        },
        Fault::Delay {
            from,
            to,
            extra,
            duration: Some(d),
        } => Fault::Delay {
            from,
            to,
            extra,
            duration: Some(cap(d).max(Dur::from_nanos(1))),
        },
        Fault::Degrade {
            from,
            to,
            loss_ppm,
            duplicate_ppm,
            duration: Some(d),
        } => Fault::Degrade {
            from,
            to,
            loss_ppm,
            duplicate_ppm,
            duration: Some(cap(d).max(Dur::from_nanos(1))),
        },
        Fault::ClockStrobe {
            node,
            delta_ns,
            period,
            duration,
        } => Fault::ClockStrobe {
            node,
            delta_ns,
            period,
            duration: cap(duration).max(Dur::from_nanos(1)),
        },
        Fault::ClockSlew {
            node,
            delta_ns,
            rate_ppm,
        } => {
            // A slew lasts |delta| / rate; shrink the delta so it ends in time.
            let most = u128::from(room.as_nanos()) * u128::from(rate_ppm) / 1_000_000;
            let most = i64::try_from(most).unwrap_or(i64::MAX);
            Fault::ClockSlew {
                node,
                delta_ns: delta_ns.clamp(-most, most),
                rate_ppm,
            }
        }
        other => other,
    }
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> Option<&'a T> {
    if items.is_empty() {
        None
    } else {
        Some(&items[rng.below(items.len() as u64) as usize])
    }
}
