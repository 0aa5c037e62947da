//! Faults as data: what the world can do to processes, clocks and links, and when.
//!
//! A fault is plain serde data with a target and parameters; a [`ScheduledFault`] adds when it
//! happens: at a true time, or when a node reaches a named point in its code (a *mark*, such as
//! `validity-checked`), which lets a scenario place a pause at the worst moment without
//! knowing the run's timing in advance.

use serde::{Deserialize, Serialize};

use crate::net::{PartitionMode, Shape};
use crate::time::{Dur, Time};
use crate::world::NodeId;

/// One fault.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The process stops running (GC, SIGSTOP); its clocks keep going and its host's kernel
    /// still works: it acknowledges and buffers what arrives, which the process handles in
    /// order when it resumes, with its timers that came due, and answers keepalive probes.
    Pause {
        /// The process.
        node: NodeId,
        /// How long; `None` pauses until a [`Fault::Resume`].
        duration: Option<Dur>,
    },
    /// The whole host stops (a paused VM, a hung host): the process is paused and its kernel
    /// with it, so nothing reaches it or answers from it: its peers' segments wait for their
    /// retransmissions, its keepalive probes go unanswered. Its clocks keep going.
    Freeze {
        /// The host.
        node: NodeId,
        /// How long; `None` freezes it until a [`Fault::Resume`].
        duration: Option<Dur>,
    },
    /// A paused process, or a frozen host, runs again.
    Resume {
        /// The process.
        node: NodeId,
    },
    /// The process crashes: volatile state is lost, in-flight inbound messages are dropped,
    /// timers are cancelled.
    Crash {
        /// The process.
        node: NodeId,
        /// Restart it this long after the crash; `None` leaves it down.
        restart_after: Option<Dur>,
    },
    /// A crashed process starts again from what its model declares durable.
    Restart {
        /// The process.
        node: NodeId,
    },
    /// Block links.
    Partition {
        /// Which links.
        shape: Shape,
        /// Drop or hold the messages that arrive while blocked.
        mode: PartitionMode,
        /// Heal this partition after this long; `None` waits for a [`Fault::Heal`].
        duration: Option<Dur>,
    },
    /// Heal every partition in force.
    Heal,
    /// Step a node's wall clock (NTP step, `date -s`): forward when positive.
    ClockStep {
        /// The node.
        node: NodeId,
        /// Signed step in nanoseconds.
        delta_ns: i64,
    },
    /// Slew a node's wall clock by `delta_ns` at `rate_ppm` (ntpd/chronyd adjtime).
    ClockSlew {
        /// The node.
        node: NodeId,
        /// Signed total change in nanoseconds.
        delta_ns: i64,
        /// The slew rate in ppm (ntpd at most 500, chronyd 1000 by default).
        rate_ppm: u32,
    },
    /// Set the drift of a node's clocks, in ppm (crystal ±50, a bad one more).
    ClockDrift {
        /// The node.
        node: NodeId,
        /// New drift; negative runs slow.
        drift_ppm: i64,
    },
    /// Add one-way delay to every message sent from any of `from` to any of `to`: a clogged
    /// switch, a retransmission storm, the "90 seconds in the network" of Kleppmann's K3.
    Delay {
        /// Senders.
        from: Vec<NodeId>,
        /// Receivers.
        to: Vec<NodeId>,
        /// Extra one-way delay per message.
        extra: Dur,
        /// How long the links stay slow; `None` keeps them slow for the rest of the run.
        duration: Option<Dur>,
    },
    /// Make every link from any of `from` to any of `to` lossier and duplicate more: a flaky
    /// NIC, a congested switch, a retransmitting middlebox. A message sent on such a link is
    /// lost with probability `loss_ppm` on top of the link's own loss, and independently of it,
    /// so the chances combine as `1 - (1 - a)(1 - b)` (in integer ppm, see
    /// [`crate::net::combine_ppm`]); duplication likewise. Overlapping degrades on one link
    /// combine the same way, and each one's end takes away only its own share.
    Degrade {
        /// Senders.
        from: Vec<NodeId>,
        /// Receivers.
        to: Vec<NodeId>,
        /// Extra probability of loss, per million.
        loss_ppm: u32,
        /// Extra probability of duplication, per million.
        duplicate_ppm: u32,
        /// How long the links stay degraded; `None` keeps them so for the rest of the run.
        duration: Option<Dur>,
    },
    /// Jepsen's clock strobe: the node's wall clock steps by `+delta_ns`, then back by
    /// `-delta_ns`, alternately every `period`, for `duration`. Steps fall at the start and
    /// at every whole period after it that is still before the end; if the last of them left
    /// the clock off, it steps back at the end, so afterwards the clock reads what it would
    /// have without the strobe. Each step re-arms wall timers as [`Fault::ClockStep`] does
    /// (and, like any step, cancels a slew in progress). The clock belongs to the machine, so
    /// a crash of the node does not stop the strobe. Two strobes on one node stack: each
    /// steps by its own delta on its own beat and takes back only its own steps.
    ClockStrobe {
        /// The node.
        node: NodeId,
        /// Signed size of each step away from the unstrobed clock, in nanoseconds.
        delta_ns: i64,
        /// Time between steps; must be positive.
        period: Dur,
        /// How long the strobe lasts.
        duration: Dur,
    },
    /// The process is told to stop (SIGTERM: a pod deleted, a rolling deploy, a scale-down):
    /// it runs its shutdown ([`crate::Process::on_terminate`]) and is killed `grace` later if
    /// it is still up (SIGKILL after Kubernetes' `terminationGracePeriodSeconds`, 30 s by
    /// default), as [`Fault::Crash`] without a restart. A paused process runs no handler: it
    /// is only killed when the grace ends.
    Terminate {
        /// The process.
        node: NodeId,
        /// How long it has before the kill.
        grace: Dur,
    },
}

impl Fault {
    /// The same fault on `node` instead of the node it names: a fault on one process or its
    /// clocks, or a partition that isolates one node. `None` for the others, which cannot be
    /// aimed at a role.
    pub fn aimed_at(&self, node: NodeId) -> Option<Fault> {
        let mut f = self.clone();
        match &mut f {
            Fault::Pause { node: n, .. }
            | Fault::Freeze { node: n, .. }
            | Fault::Resume { node: n }
            | Fault::Crash { node: n, .. }
            | Fault::Terminate { node: n, .. }
            | Fault::Restart { node: n }
            | Fault::ClockStep { node: n, .. }
            | Fault::ClockSlew { node: n, .. }
            | Fault::ClockDrift { node: n, .. }
            | Fault::ClockStrobe { node: n, .. }
            | Fault::Partition {
                shape: Shape::Isolate { node: n },
                ..
            } => *n = node,
            Fault::Partition { .. } | Fault::Heal | Fault::Delay { .. } | Fault::Degrade { .. } => {
                return None;
            }
        }
        Some(f)
    }

    /// The nodes this fault names.
    pub fn nodes(&self) -> Vec<NodeId> {
        match self {
            Fault::Pause { node, .. }
            | Fault::Freeze { node, .. }
            | Fault::Resume { node }
            | Fault::Crash { node, .. }
            | Fault::Terminate { node, .. }
            | Fault::Restart { node }
            | Fault::ClockStep { node, .. }
            | Fault::ClockSlew { node, .. }
            | Fault::ClockDrift { node, .. }
            | Fault::ClockStrobe { node, .. } => vec![*node],
            Fault::Partition { shape, .. } => shape.nodes(),
            Fault::Heal => Vec::new(),
            Fault::Delay { from, to, .. } | Fault::Degrade { from, to, .. } => {
                let mut v: Vec<NodeId> = from.iter().chain(to).copied().collect();
                v.sort();
                v.dedup();
                v
            }
        }
    }
}

/// When a scheduled fault happens.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    /// At a true time.
    At(Time),
    /// Right after `node` records its `occurrence`-th (from 1) mark named `mark`, before
    /// anything else happens in the world. A process reaches marks at the points where real
    /// code could be interrupted, e.g. between a validity check and a write.
    OnMark {
        /// The node whose code reaches the mark.
        node: NodeId,
        /// The mark's name.
        mark: String,
        /// Which occurrence triggers the fault, from 1.
        occurrence: u32,
        /// The trigger lapses at this true time: a mark reached at or after it fires nothing.
        /// A chaos profile uses it to keep its faults out of the quiet tail of a run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<Time>,
    },
}

/// A scheduled fault that did not fire in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unfired {
    /// Its place among the faults the world was given, from 0, in the order given.
    pub index: usize,
    /// Why it did not fire.
    pub why: Unreached,
}

/// Why a scheduled fault did not fire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreached {
    /// Scheduled on a mark: its node never reached the mark's `occurrence`-th time, or the
    /// trigger lapsed first.
    Mark {
        /// The node whose code was to reach the mark.
        node: NodeId,
        /// The mark.
        mark: String,
        /// The occurrence that was to fire it.
        occurrence: u32,
        /// How many times the node reached the mark in the run.
        reached: u32,
        /// The trigger's lapse time, when the run got that far.
        lapsed: Option<Time>,
    },
    /// Aimed at a role ([`ScheduledFault::role`]): it came due at `since` and no node played
    /// the role from then to the end of the run.
    Role {
        /// The role.
        role: String,
        /// When it came due.
        since: Time,
    },
}

/// A fault and when it happens.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// When.
    pub when: When,
    /// What.
    pub fault: Fault,
    /// Aimed at a role rather than a node: when the fault comes due, it hits whichever node
    /// plays `role` then ([`crate::Process::plays`]; the newest claimant when several do),
    /// in place of the node the fault names ([`Fault::aimed_at`]); when none does, it waits
    /// until one does. Only faults on one node and partitions that isolate one can be aimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl ScheduledFault {
    /// `fault` at `when`, on the node it names.
    pub fn new(when: When, fault: Fault) -> ScheduledFault {
        ScheduledFault {
            when,
            fault,
            role: None,
        }
    }

    /// `fault` at `when`, aimed at whichever node plays `role` when it comes due.
    ///
    /// # Panics
    /// When `fault` cannot be aimed ([`Fault::aimed_at`]).
    pub fn aimed(when: When, fault: Fault, role: &str) -> ScheduledFault {
        assert!(
            fault.aimed_at(NodeId(0)).is_some(),
            "{fault:?} cannot be aimed at a role"
        );
        ScheduledFault {
            when,
            fault,
            role: Some(role.to_string()),
        }
    }
}

/// A fault as the world applied it, for the history and reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AppliedFault {
    /// True time at which it took effect.
    pub time: Time,
    /// What it was. Follow-up actions the world schedules itself (the resume after a timed
    /// pause, the heal after a timed partition, the restart after a crash) appear as their
    /// own entries.
    pub fault: Fault,
    /// The nodes it affected: for a partition, the side it cuts off (the smaller side of a
    /// split, the isolated node, the senders of a one-way cut); for a heal, the nodes on the
    /// links it opened.
    pub nodes: Vec<NodeId>,
    /// A short description with names resolved.
    pub detail: String,
    /// True when this entry is the end of a timed fault rather than its start (only the ends
    /// of a [`Fault::Delay`], a [`Fault::Degrade`] and a [`Fault::ClockStrobe`] are logged this
    /// way; heals, resumes and restarts are faults of their own).
    pub ended: bool,
    /// How many history records the world held when the fault was applied, so the fault can
    /// be placed exactly among them.
    pub records_before: usize,
}
