//! The world: the event loop that owns every nondeterministic choice, and the `Process` trait
//! through which models see it.
//!
//! A model node is a plain struct implementing [`Process`]. Its handlers receive an [`Env`]
//! (here the world's [`Ctx`]) and can only read their own clocks (local time, never true time),
//! send messages, set and cancel timers on either clock, draw from their own random stream,
//! record history events, emit observations and reach named marks. Everything else — delivery delay, loss, duplication, partitions, clock rates
//! and steps, pauses, crashes — is decided here, from the run's seed and its fault schedule.
//!
//! Events are ordered by (true time, sequence number). Every run is bounded by an end time and
//! a maximum number of events; running out of events is the explicit [`Outcome::Exhausted`].
//! Start reading at [`World::run`] and [`World::handle`].

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::clock::{ClockKind, Clocks};
use crate::env::{Env, EnvOf};
use crate::fault::{AppliedFault, Fault, ScheduledFault, When};
use crate::net::{Gate, LinkConfig, Links, PartitionMode};
use crate::rng::Rng;
use crate::time::{Dur, LocalTime, Time};
use crate::trace::{TraceEntry, TraceHasher, TraceKind};

/// A node of the world, by index in the order the nodes were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A model node: a state machine driven by its host.
///
/// Handlers must not block, loop unboundedly, read the host's time, use global randomness or
/// do IO: everything goes through the [`Env`] they receive. The world's [`Ctx`] is one such
/// environment; a process never names it, so another host can run the same process.
pub trait Process: Sized {
    /// The messages nodes send each other.
    type Msg: Clone + fmt::Debug + Hash;
    /// What a timer carries back to its node when it fires.
    type Timer: Copy + fmt::Debug + Hash;
    /// The history events nodes record.
    type Event: fmt::Debug + Hash;
    /// What nodes note for observers beside the history ([`Env::observe`]).
    type Observation: fmt::Debug;

    /// Called once at true time zero.
    fn on_start(&mut self, env: &mut impl EnvOf<Self>);
    /// A message arrived.
    fn on_message(&mut self, env: &mut impl EnvOf<Self>, from: NodeId, msg: Self::Msg);
    /// A timer set by this node fired.
    fn on_timer(&mut self, env: &mut impl EnvOf<Self>, id: TimerId, timer: Self::Timer);
    /// The node crashed: drop every piece of volatile state, keep only what the real system
    /// keeps on disk. Nothing can be sent or recorded here.
    fn on_crash(&mut self);
    /// The node starts again after a crash, from what [`Process::on_crash`] kept.
    fn on_restart(&mut self, env: &mut impl EnvOf<Self>);
}

/// A timer, as returned by [`Env::set_timer`]; used to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerId {
    slot: u32,
    generation: u32,
}

impl TimerId {
    /// A timer id of another host, from its own 64-bit name for the timer.
    pub fn from_raw(raw: u64) -> TimerId {
        TimerId {
            slot: raw as u32,
            generation: (raw >> 32) as u32,
        }
    }

    /// The id as 64 bits ([`TimerId::from_raw`] gives it back).
    pub fn raw(self) -> u64 {
        u64::from(self.generation) << 32 | u64::from(self.slot)
    }
}

/// Whether a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Running.
    Up,
    /// Paused: its clocks run, nothing else does.
    Paused,
    /// Crashed and not restarted.
    Down,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The run reached its end time (or nothing was left to happen before it).
    Completed,
    /// The run hit its event bound at this true time, before its end.
    Exhausted {
        /// True time of the last event handled.
        at: Time,
    },
}

/// One node's setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// The node's name, used in traces and fault descriptions.
    pub name: String,
    /// Initial drift of its clocks, in ppm.
    pub drift_ppm: i64,
    /// Initial offset of its wall clock from the world's wall epoch, in nanoseconds.
    pub wall_offset_ns: i64,
    /// Initial reading of its monotonic clock; `None` draws a boot time from the node's stream,
    /// so that nothing can rely on monotonic readings agreeing across nodes.
    pub mono_start: Option<LocalTime>,
}

impl NodeConfig {
    /// A node with perfect clocks.
    pub fn named(name: impl Into<String>) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            drift_ppm: 0,
            wall_offset_ns: 0,
            mono_start: None,
        }
    }
}

/// Everything that defines a run, besides the processes themselves.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// The root seed: every random draw of the run derives from it.
    pub seed: u64,
    /// True time at which the run ends.
    pub end: Time,
    /// The most events the run may handle before it is cut off.
    pub max_events: u64,
    /// What every wall clock reads at true time zero (before its own offset).
    pub wall_epoch: LocalTime,
    /// Keep readable trace lines (the hash is always computed).
    pub trace: bool,
    /// The default link between any two nodes.
    pub link: LinkConfig,
    /// Per directed link overrides.
    pub links: Vec<(NodeId, NodeId, LinkConfig)>,
    /// The nodes, in [`NodeId`] order.
    pub nodes: Vec<NodeConfig>,
    /// The fault schedule.
    pub faults: Vec<ScheduledFault>,
}

/// 2026-01-01T00:00:00Z in Unix nanoseconds: the default wall epoch.
pub const DEFAULT_WALL_EPOCH: LocalTime = LocalTime::from_nanos(1_767_225_600_000_000_000);

impl WorldConfig {
    /// A configuration with the given seed and nodes, ending at `end`, with default bounds.
    pub fn new(seed: u64, end: Time, nodes: Vec<NodeConfig>) -> WorldConfig {
        WorldConfig {
            seed,
            end,
            max_events: 50_000_000,
            wall_epoch: DEFAULT_WALL_EPOCH,
            trace: false,
            link: LinkConfig::default(),
            links: Vec::new(),
            nodes,
            faults: Vec::new(),
        }
    }
}

/// A history event (or an observation) of a node, stamped with true time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record<E> {
    /// True time of the event.
    pub time: Time,
    /// The node that recorded it.
    pub node: NodeId,
    /// The event.
    pub event: E,
}

/// The world's [`Env`]: the handle a process's handlers get to it.
pub struct Ctx<'a, P: Process> {
    core: &'a mut Core<P>,
    node: NodeId,
}

impl<P: Process> fmt::Debug for Ctx<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl<P: Process> Env for Ctx<'_, P> {
    type Msg = P::Msg;
    type Timer = P::Timer;
    type Event = P::Event;
    type Observation = P::Observation;

    fn id(&self) -> NodeId {
        self.node
    }

    fn name(&self) -> &str {
        &self.core.names[self.node.index()]
    }

    #[inline]
    fn clock(&self, kind: ClockKind) -> LocalTime {
        self.core.nodes[self.node.index()]
            .clocks
            .read(kind, self.core.now)
    }

    #[inline]
    fn mono(&self) -> LocalTime {
        self.core.nodes[self.node.index()]
            .clocks
            .mono(self.core.now)
    }

    #[inline]
    fn wall(&self) -> LocalTime {
        self.core.nodes[self.node.index()]
            .clocks
            .wall(self.core.now)
    }

    fn send(&mut self, to: NodeId, msg: P::Msg) {
        self.core.send(self.node, to, msg);
    }

    fn set_timer_at(&mut self, clock: ClockKind, deadline: LocalTime, timer: P::Timer) -> TimerId {
        self.core.set_timer(self.node, clock, deadline, timer)
    }

    fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.core.cancel_timer(self.node, id)
    }

    fn rng(&mut self) -> &mut Rng {
        &mut self.core.nodes[self.node.index()].rng
    }

    fn record(&mut self, event: P::Event) {
        self.core.record(self.node, event);
    }

    fn observe(&mut self, observation: P::Observation) {
        self.core.observations.push(Record {
            time: self.core.now,
            node: self.node,
            event: observation,
        });
    }

    fn mark(&mut self, mark: &'static str) {
        self.core.mark(self.node, mark);
    }
}

/// One world: processes, and the core that drives them.
pub struct World<P: Process> {
    procs: Vec<P>,
    core: Core<P>,
}

impl<P: Process> fmt::Debug for World<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("now", &self.core.now)
            .field("events", &self.core.events)
            .finish_non_exhaustive()
    }
}

struct NodeState<P: Process> {
    status: Status,
    /// Bumped on every pause so that a stale timed resume is ignored.
    pause_generation: u32,
    paused_until: Option<Time>,
    /// Bumped on crash and on restart: messages addressed to an older incarnation are lost.
    incarnation: u32,
    clocks: Clocks,
    rng: Rng,
    /// Messages and timers that came due while paused, in order.
    deferred: VecDeque<Deferred<P>>,
    /// Occurrences of each mark so far.
    marks: Vec<(&'static str, u32)>,
}

enum Deferred<P: Process> {
    Message { from: NodeId, msg: P::Msg },
    Timer { id: TimerId },
}

struct TimerSlot<T> {
    generation: u32,
    /// Bumped on every re-arm so that queue entries of an earlier arming are ignored.
    arming: u32,
    node: NodeId,
    clock: ClockKind,
    deadline: LocalTime,
    /// `Some` while the timer is pending.
    timer: Option<T>,
    /// The timer came due while its node was paused and waits in `deferred`.
    deferred: bool,
}

struct Held<M> {
    /// Send order on the world, so a hold-mode link releases in send order as TCP would.
    sent: u64,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
}

struct Partition {
    id: u32,
    links: Vec<(NodeId, NodeId)>,
    mode: PartitionMode,
}

struct Delay {
    id: u32,
    links: Vec<(NodeId, NodeId)>,
    extra: Dur,
    fault: Fault,
}

/// A degrade in force; its links and chances live in [`Links`].
struct Degradation {
    id: u32,
    fault: Fault,
}

/// A clock strobe in progress.
struct Strobe {
    id: u32,
    node: NodeId,
    delta_ns: i64,
    period: Dur,
    /// True time at which it ends.
    end: Time,
    /// Whether its last step left the clock `delta_ns` away from where it would be.
    off: bool,
    fault: Fault,
}

struct Trigger {
    node: NodeId,
    mark: String,
    occurrence: u32,
    before: Option<Time>,
    fault: Fault,
}

enum Action<P: Process> {
    Start {
        node: NodeId,
    },
    Deliver(Delivery<P::Msg>),
    Timer {
        id: TimerId,
        arming: u32,
    },
    Fault(Fault),
    /// The restart a crash scheduled: it applies only to the incarnation that crashed.
    CrashRestart {
        node: NodeId,
        incarnation: u32,
    },
    TimedResume {
        node: NodeId,
        generation: u32,
    },
    HealOne {
        id: u32,
    },
    EndDelay {
        id: u32,
    },
    EndSlew {
        node: NodeId,
    },
    EndDegrade {
        id: u32,
    },
    /// The next step of a clock strobe.
    StrobeStep {
        id: u32,
    },
    EndStrobe {
        id: u32,
    },
}

/// A message on the wire.
struct Delivery<M> {
    from: NodeId,
    to: NodeId,
    /// Send order on the world.
    sent: u64,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
}

/// A place in the event queue: when, in what order, and the slot of [`Core::actions`] that
/// holds the action. The heap moves only these small keys while the actions (a message can
/// be large) stay put, so a push or pop costs a few 24-byte moves instead of copies of the
/// whole action at every level of the heap.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    time: Time,
    seq: u64,
    slot: u32,
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` pops the earliest (time, seq) first. Sequence numbers
    /// are unique, so the slot never decides.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

struct Core<P: Process> {
    now: Time,
    seq: u64,
    queue: BinaryHeap<Entry>,
    /// The actions of the queue's entries, by slot; `None` in a free slot.
    actions: Vec<Option<Action<P>>>,
    /// Slots of `actions` free for reuse.
    free_actions: Vec<u32>,
    names: Vec<String>,
    nodes: Vec<NodeState<P>>,
    timers: Vec<TimerSlot<P::Timer>>,
    free_timers: Vec<u32>,
    links: Links,
    held: BTreeMap<(NodeId, NodeId), VecDeque<Held<P::Msg>>>,
    /// Per link that released held messages: when the last of them arrives, and its send
    /// order. A message sent after it that would arrive sooner waits for it, so the stream
    /// stays in order.
    released_until: BTreeMap<(NodeId, NodeId), (Time, u64)>,
    partitions: Vec<Partition>,
    delays: Vec<Delay>,
    degrades: Vec<Degradation>,
    strobes: Vec<Strobe>,
    next_id: u32,
    /// Messages sent so far.
    sends: u64,
    net_rng: Rng,
    fault_rng: Rng,
    triggers: Vec<Trigger>,
    fired: Vec<Fault>,
    fault_log: Vec<AppliedFault>,
    history: Vec<Record<P::Event>>,
    /// Observations, beside the history: kept, never hashed.
    observations: Vec<Record<P::Observation>>,
    hasher: TraceHasher,
    trace: Option<Vec<TraceEntry>>,
    events: u64,
    end: Time,
    max_events: u64,
}

/// Trace codes folded into the hash ahead of each event's own data.
mod code {
    pub(super) const START: u8 = 1;
    pub(super) const DELIVER: u8 = 2;
    pub(super) const TIMER: u8 = 3;
    pub(super) const FAULT: u8 = 4;
    pub(super) const RECORD: u8 = 5;
    pub(super) const MARK: u8 = 6;
    pub(super) const DROP: u8 = 7;
    pub(super) const HOLD: u8 = 8;
    pub(super) const DEFER: u8 = 9;
    pub(super) const STROBE: u8 = 10;
}

/// Why a message was lost, for the trace.
#[derive(Clone, Copy, Debug, Hash)]
enum Loss {
    Link,
    Partition,
    ReceiverCrashed,
    SenderCrashed,
}

impl<P: Process> Core<P> {
    fn push(&mut self, time: Time, action: Action<P>) {
        debug_assert!(time >= self.now, "scheduling into the past");
        self.seq += 1;
        let slot = match self.free_actions.pop() {
            Some(slot) => {
                self.actions[slot as usize] = Some(action);
                slot
            }
            None => {
                self.actions.push(Some(action));
                u32::try_from(self.actions.len() - 1).expect("fewer than 2^32 queued actions")
            }
        };
        self.queue.push(Entry {
            time,
            seq: self.seq,
            slot,
        });
    }

    /// Folds one event into the trace hash: its time, its code and its data.
    #[inline]
    fn hash_event(&mut self, code: u8, data: impl Hash) {
        self.hasher.write_u64(self.now.as_nanos());
        self.hasher.write_u8(code);
        data.hash(&mut self.hasher);
    }

    fn trace_line(&mut self, kind: TraceKind, node: NodeId, text: impl FnOnce(&Self) -> String) {
        if self.trace.is_none() {
            return;
        }
        let entry = TraceEntry {
            time: self.now,
            kind,
            node,
            text: text(self),
        };
        if let Some(trace) = &mut self.trace {
            trace.push(entry);
        }
    }

    fn name(&self, node: NodeId) -> &str {
        &self.names[node.index()]
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let (loss_ppm, duplicate_ppm) = self.links.loss_and_duplicate(from, to);
        if self.net_rng.chance_ppm(loss_ppm) {
            self.lose(from, to, &msg, Loss::Link);
            return;
        }
        if self.net_rng.chance_ppm(duplicate_ppm) {
            self.launch(from, to, msg.clone());
        }
        self.launch(from, to, msg);
    }

    /// Puts one copy of a message on the wire with a fresh latency.
    fn launch(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let latency = self
            .links
            .config(from, to)
            .latency
            .sample(&mut self.net_rng);
        let at = self
            .now
            .saturating_add(latency.saturating_add(self.links.extra(from, to)));
        let from_incarnation = self.nodes[from.index()].incarnation;
        let to_incarnation = self.nodes[to.index()].incarnation;
        self.sends += 1;
        let sent = self.sends;
        let d = Delivery {
            from,
            to,
            sent,
            from_incarnation,
            to_incarnation,
            msg,
        };
        self.push(at, Action::Deliver(d));
    }

    fn lose(&mut self, from: NodeId, to: NodeId, msg: &P::Msg, why: Loss) {
        self.hash_event(code::DROP, (from, to, why, msg));
        self.trace_line(TraceKind::Drop, to, |c| {
            format!("{} -> {} lost ({why:?}): {msg:?}", c.name(from), c.name(to))
        });
    }

    fn set_timer(
        &mut self,
        node: NodeId,
        clock: ClockKind,
        deadline: LocalTime,
        timer: P::Timer,
    ) -> TimerId {
        let slot = match self.free_timers.pop() {
            Some(slot) => slot,
            None => {
                self.timers.push(TimerSlot {
                    generation: 0,
                    arming: 0,
                    node,
                    clock,
                    deadline,
                    timer: None,
                    deferred: false,
                });
                u32::try_from(self.timers.len() - 1).expect("too many timers")
            }
        };
        let s = &mut self.timers[slot as usize];
        s.node = node;
        s.clock = clock;
        s.deadline = deadline;
        s.timer = Some(timer);
        s.deferred = false;
        s.arming = s.arming.wrapping_add(1);
        let id = TimerId {
            slot,
            generation: s.generation,
        };
        let arming = s.arming;
        let due = self.nodes[node.index()]
            .clocks
            .when(clock, deadline, self.now);
        self.push(due, Action::Timer { id, arming });
        id
    }

    fn live_timer(&self, id: TimerId) -> Option<&TimerSlot<P::Timer>> {
        self.timers
            .get(id.slot as usize)
            .filter(|s| s.generation == id.generation && s.timer.is_some())
    }

    fn free_timer(&mut self, slot: u32) {
        let s = &mut self.timers[slot as usize];
        s.timer = None;
        s.deferred = false;
        s.generation = s.generation.wrapping_add(1);
        self.free_timers.push(slot);
    }

    fn cancel_timer(&mut self, node: NodeId, id: TimerId) -> bool {
        match self.live_timer(id) {
            Some(s) if s.node == node => {
                self.free_timer(id.slot);
                true
            }
            _ => false,
        }
    }

    /// Re-arms a node's pending timers on the clocks that just changed: their local
    /// deadlines now fall at other true times.
    fn rearm(&mut self, node: NodeId, wall_only: bool) {
        for slot in 0..self.timers.len() {
            let s = &mut self.timers[slot];
            let affected = s.node == node
                && s.timer.is_some()
                && !s.deferred
                && (!wall_only || s.clock == ClockKind::Wall);
            if !affected {
                continue;
            }
            s.arming = s.arming.wrapping_add(1);
            let id = TimerId {
                slot: slot as u32,
                generation: s.generation,
            };
            let (arming, clock, deadline) = (s.arming, s.clock, s.deadline);
            let due = self.nodes[node.index()]
                .clocks
                .when(clock, deadline, self.now);
            self.push(due, Action::Timer { id, arming });
        }
    }

    fn record(&mut self, node: NodeId, event: P::Event) {
        self.hash_event(code::RECORD, (node, &event));
        self.trace_line(TraceKind::Record, node, |_| format!("{event:?}"));
        self.history.push(Record {
            time: self.now,
            node,
            event,
        });
    }

    fn mark(&mut self, node: NodeId, mark: &'static str) {
        self.hash_event(code::MARK, (node, mark));
        self.trace_line(TraceKind::Mark, node, |_| format!("mark {mark}"));
        let marks = &mut self.nodes[node.index()].marks;
        let count = match marks.iter_mut().find(|(m, _)| *m == mark) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                marks.push((mark, 1));
                1
            }
        };
        let mut i = 0;
        while i < self.triggers.len() {
            let t = &self.triggers[i];
            if t.node == node && t.mark == mark && t.occurrence == count {
                let t = self.triggers.remove(i);
                // A lapsed trigger is gone without a trace: it changes nothing in the run.
                if t.before.is_none_or(|b| self.now < b) {
                    self.fired.push(t.fault);
                }
            } else {
                i += 1;
            }
        }
    }

    /// Sends the messages held on links that are open again, in their original order, each
    /// after a fresh latency and never before the one ahead of it (a TCP stream). Returns how
    /// many were released.
    fn flush_held(&mut self) -> usize {
        let open: Vec<(NodeId, NodeId)> = self
            .held
            .keys()
            .copied()
            .filter(|&(a, b)| self.links.gate(a, b) == Gate::Open)
            .collect();
        let mut released = 0;
        for (from, to) in open {
            let queue = self.held.remove(&(from, to)).expect("held queue exists");
            let (mut at, mut last_sent) = self
                .released_until
                .get(&(from, to))
                .copied()
                .unwrap_or((self.now, 0));
            at = at.max(self.now);
            for held in queue {
                if held.from_incarnation != self.nodes[from.index()].incarnation {
                    self.lose(from, to, &held.msg, Loss::SenderCrashed);
                    continue;
                }
                let latency = self
                    .links
                    .config(from, to)
                    .latency
                    .sample(&mut self.net_rng);
                at = at.max(
                    self.now
                        .saturating_add(latency.saturating_add(self.links.extra(from, to))),
                );
                let Held {
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                } = held;
                let d = Delivery {
                    from,
                    to,
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                };
                self.push(at, Action::Deliver(d));
                last_sent = last_sent.max(sent);
                released += 1;
            }
            self.released_until.insert((from, to), (at, last_sent));
        }
        released
    }

    fn log_fault(&mut self, fault: &Fault, nodes: Vec<NodeId>, detail: String) {
        self.log(fault, nodes, detail, false);
    }

    fn log(&mut self, fault: &Fault, nodes: Vec<NodeId>, detail: String, ended: bool) {
        self.hash_event(code::FAULT, (fault, ended));
        let node = nodes.first().copied().unwrap_or(NodeId(0));
        self.trace_line(TraceKind::Fault, node, |_| detail.clone());
        let records_before = self.history.len();
        let time = self.now;
        let fault = fault.clone();
        self.fault_log.push(AppliedFault {
            time,
            fault,
            nodes,
            detail,
            ended,
            records_before,
        });
    }

    fn names_of(&self, nodes: &[NodeId]) -> String {
        let names: Vec<&str> = nodes.iter().map(|&n| self.name(n)).collect();
        format!("{{{}}}", names.join(", "))
    }
}

impl<P: Process> World<P> {
    /// A world of `procs`, one per node of `config.nodes`, in the same order.
    ///
    /// # Panics
    /// If the counts differ or a fault names a node that does not exist: the scenario loader
    /// checks both and reports them as errors before a world is built.
    pub fn new(config: WorldConfig, procs: Vec<P>) -> World<P> {
        assert_eq!(config.nodes.len(), procs.len(), "one process per node");
        let n = procs.len();
        let mut links = Links::new(n, &config.link);
        for (from, to, link) in &config.links {
            links.set_config(*from, *to, link.clone());
        }
        let nodes = config
            .nodes
            .iter()
            .map(|nc| {
                let mut rng = Rng::fork(config.seed, &format!("node/{}", nc.name));
                // Boot times up to about 11.5 days: realistic, and different per node.
                let mono_start = nc
                    .mono_start
                    .unwrap_or_else(|| LocalTime::from_nanos(rng.below(1 << 50) as i64));
                let wall = LocalTime::from_nanos(config.wall_epoch.as_nanos() + nc.wall_offset_ns);
                NodeState {
                    status: Status::Up,
                    pause_generation: 0,
                    paused_until: None,
                    incarnation: 0,
                    clocks: Clocks::new(Time::ZERO, mono_start, wall, nc.drift_ppm),
                    rng,
                    deferred: VecDeque::new(),
                    marks: Vec::new(),
                }
            })
            .collect();
        let mut core = Core {
            now: Time::ZERO,
            seq: 0,
            queue: BinaryHeap::new(),
            actions: Vec::new(),
            free_actions: Vec::new(),
            names: config.nodes.iter().map(|nc| nc.name.clone()).collect(),
            nodes,
            timers: Vec::new(),
            free_timers: Vec::new(),
            links,
            held: BTreeMap::new(),
            released_until: BTreeMap::new(),
            partitions: Vec::new(),
            delays: Vec::new(),
            degrades: Vec::new(),
            strobes: Vec::new(),
            next_id: 0,
            sends: 0,
            net_rng: Rng::fork(config.seed, "network"),
            fault_rng: Rng::fork(config.seed, "faults"),
            triggers: Vec::new(),
            fired: Vec::new(),
            fault_log: Vec::new(),
            history: Vec::new(),
            observations: Vec::new(),
            hasher: TraceHasher::new(),
            trace: config.trace.then(Vec::new),
            events: 0,
            end: config.end,
            max_events: config.max_events,
        };
        for i in 0..n {
            core.push(
                Time::ZERO,
                Action::Start {
                    node: NodeId(i as u32),
                },
            );
        }
        let mut world = World { procs, core };
        for sf in config.faults {
            world.schedule(sf);
        }
        world
    }

    /// Adds a fault to the schedule.
    pub fn schedule(&mut self, sf: ScheduledFault) {
        for node in sf.fault.nodes() {
            assert!(
                node.index() < self.procs.len(),
                "fault names unknown node {node:?}"
            );
        }
        match sf.when {
            When::At(t) => self
                .core
                .push(t.max(self.core.now), Action::Fault(sf.fault)),
            When::OnMark {
                node,
                mark,
                occurrence,
                before,
            } => {
                self.core.triggers.push(Trigger {
                    node,
                    mark,
                    occurrence,
                    before,
                    fault: sf.fault,
                });
            }
        }
    }

    /// Runs to the end time or the event bound, whichever comes first.
    pub fn run(&mut self) -> Outcome {
        self.run_until(self.core.end)
    }

    /// Runs every event up to and including true time `until` (capped at the end time), or
    /// until the event bound.
    pub fn run_until(&mut self, until: Time) -> Outcome {
        let until = until.min(self.core.end);
        loop {
            match self.core.queue.peek() {
                Some(e) if e.time <= until => {}
                _ => break,
            }
            if self.core.events >= self.core.max_events {
                return Outcome::Exhausted { at: self.core.now };
            }
            let entry = self.core.queue.pop().expect("peeked");
            let action = self.core.actions[entry.slot as usize]
                .take()
                .expect("a queued entry's slot holds its action");
            self.core.free_actions.push(entry.slot);
            self.core.now = entry.time;
            self.handle(action);
        }
        self.core.now = self.core.now.max(until);
        Outcome::Completed
    }

    /// Handles one event.
    fn handle(&mut self, action: Action<P>) {
        match action {
            Action::Start { node } => {
                self.core.events += 1;
                self.core.hash_event(code::START, node);
                self.core
                    .trace_line(TraceKind::Start, node, |_| "start".to_string());
                self.dispatch(node, |p, ctx| p.on_start(ctx));
            }
            Action::Deliver(d) => {
                self.core.events += 1;
                self.deliver(d);
            }
            Action::Timer { id, arming } => {
                let due = self
                    .core
                    .live_timer(id)
                    .is_some_and(|s| s.arming == arming && !s.deferred);
                if due {
                    self.core.events += 1;
                    self.fire_timer(id);
                }
            }
            Action::Fault(fault) => {
                self.core.events += 1;
                self.apply(fault);
            }
            Action::CrashRestart { node, incarnation } => {
                let st = &self.core.nodes[node.index()];
                if st.status == Status::Down && st.incarnation == incarnation {
                    self.core.events += 1;
                    self.apply(Fault::Restart { node });
                }
            }
            Action::TimedResume { node, generation } => {
                let st = &self.core.nodes[node.index()];
                if st.status == Status::Paused && st.pause_generation == generation {
                    self.core.events += 1;
                    self.apply(Fault::Resume { node });
                }
            }
            Action::HealOne { id } => {
                // A partition healed earlier by a heal-all is not an event.
                if self.core.partitions.iter().any(|p| p.id == id) {
                    self.core.events += 1;
                    self.heal(Some(id));
                }
            }
            Action::EndDelay { id } => {
                self.core.events += 1;
                self.end_delay(id);
            }
            Action::EndSlew { node } => {
                let now = self.core.now;
                if self.core.nodes[node.index()].clocks.end_slew(now) {
                    self.core.events += 1;
                    self.core.rearm(node, true);
                }
            }
            Action::EndDegrade { id } => {
                self.core.events += 1;
                self.end_degrade(id);
            }
            Action::StrobeStep { id } => {
                self.core.events += 1;
                self.strobe_step(id);
            }
            Action::EndStrobe { id } => {
                self.core.events += 1;
                self.end_strobe(id);
            }
        }
    }

    /// Runs one handler of `node`, then applies any fault its marks triggered.
    fn dispatch(&mut self, node: NodeId, f: impl FnOnce(&mut P, &mut Ctx<'_, P>)) {
        let mut ctx = Ctx {
            core: &mut self.core,
            node,
        };
        f(&mut self.procs[node.index()], &mut ctx);
        while !self.core.fired.is_empty() {
            let fired = std::mem::take(&mut self.core.fired);
            for fault in fired {
                self.apply(fault);
            }
        }
    }

    fn deliver(&mut self, d: Delivery<P::Msg>) {
        let st = &self.core.nodes[d.to.index()];
        let receiver_up = st.status != Status::Down && st.incarnation == d.to_incarnation;
        // Messages released after a heal go first: a later one on an open link waits behind
        // them, whole, and arrives again when they have.
        if receiver_up && self.core.links.gate(d.from, d.to) == Gate::Open {
            if let Some(&(until, last_sent)) = self.core.released_until.get(&(d.from, d.to)) {
                if until > self.core.now && d.sent > last_sent {
                    self.core.push(until, Action::Deliver(d));
                    return;
                }
                if until <= self.core.now {
                    self.core.released_until.remove(&(d.from, d.to));
                }
            }
        }
        let Delivery {
            from,
            to,
            sent,
            from_incarnation,
            to_incarnation,
            msg,
        } = d;
        if !receiver_up {
            self.core.lose(from, to, &msg, Loss::ReceiverCrashed);
            return;
        }
        match self.core.links.gate(from, to) {
            Gate::Drop => self.core.lose(from, to, &msg, Loss::Partition),
            Gate::Hold => {
                self.core.hash_event(code::HOLD, (from, to, &msg));
                self.core.trace_line(TraceKind::Hold, to, |c| {
                    format!(
                        "{} -> {} held by partition: {msg:?}",
                        c.name(from),
                        c.name(to)
                    )
                });
                let held = Held {
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                };
                let queue = self.core.held.entry((from, to)).or_default();
                // Keep send order: a later-sent message may have arrived first.
                let pos = queue.partition_point(|h| h.sent < sent);
                queue.insert(pos, held);
            }
            Gate::Open => {
                self.arrive(from, to, msg);
            }
        }
    }

    /// A message reached its receiver's host: handled now, or kept until it resumes.
    fn arrive(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        if self.core.nodes[to.index()].status == Status::Paused {
            self.core.hash_event(code::DEFER, (from, to, &msg));
            self.core.trace_line(TraceKind::Defer, to, |c| {
                format!(
                    "{} -> {} waits for resume: {msg:?}",
                    c.name(from),
                    c.name(to)
                )
            });
            self.core.nodes[to.index()]
                .deferred
                .push_back(Deferred::Message { from, msg });
            return;
        }
        self.core.hash_event(code::DELIVER, (from, to, &msg));
        self.core.trace_line(TraceKind::Deliver, to, |c| {
            format!("{} -> {}: {msg:?}", c.name(from), c.name(to))
        });
        self.dispatch(to, |p, ctx| p.on_message(ctx, from, msg));
    }

    fn fire_timer(&mut self, id: TimerId) {
        let slot = &self.core.timers[id.slot as usize];
        let (node, timer) = (slot.node, slot.timer.expect("live timer"));
        if self.core.nodes[node.index()].status == Status::Paused {
            self.core.timers[id.slot as usize].deferred = true;
            self.core.hash_event(code::DEFER, (node, id.slot));
            self.core.nodes[node.index()]
                .deferred
                .push_back(Deferred::Timer { id });
            return;
        }
        self.core.free_timer(id.slot);
        self.core.hash_event(code::TIMER, (node, &timer));
        self.core
            .trace_line(TraceKind::Timer, node, |_| format!("timer {timer:?}"));
        self.dispatch(node, |p, ctx| p.on_timer(ctx, id, timer));
    }

    /// Handles one item of a resumed node's backlog; a timer cancelled meanwhile is skipped.
    fn redeliver(&mut self, node: NodeId, item: Deferred<P>) {
        match item {
            Deferred::Message { from, msg } => {
                self.core.events += 1;
                self.arrive(from, node, msg);
            }
            Deferred::Timer { id } => {
                if let Some(s) = self.core.timers.get_mut(id.slot as usize) {
                    if s.generation == id.generation && s.timer.is_some() {
                        s.deferred = false;
                        self.core.events += 1;
                        self.fire_timer(id);
                    }
                }
            }
        }
    }
}

impl<P: Process> World<P> {
    /// Applies a fault now and logs it.
    fn apply(&mut self, fault: Fault) {
        match fault {
            Fault::Pause { node, duration } => self.pause(node, duration),
            Fault::Resume { node } => self.resume(node),
            Fault::Crash {
                node,
                restart_after,
            } => self.crash(node, restart_after),
            Fault::Restart { node } => self.restart(node),
            Fault::Partition {
                ref shape,
                mode,
                duration,
            } => {
                let cut = shape.resolve(self.procs.len(), &mut self.core.fault_rng);
                let links = cut.links;
                self.core.links.block(&links, mode, true);
                let id = self.core.next_id;
                self.core.next_id += 1;
                if let Some(d) = duration {
                    self.core
                        .push(self.core.now.saturating_add(d), Action::HealOne { id });
                }
                let detail = self.describe_partition(&cut.cut_off, &links, mode, duration);
                let nodes = cut.cut_off;
                self.core.partitions.push(Partition { id, links, mode });
                self.core.log_fault(&fault, nodes, detail);
            }
            Fault::Heal => self.heal(None),
            Fault::ClockStep { node, delta_ns } => {
                let now = self.core.now;
                self.core.nodes[node.index()].clocks.step(now, delta_ns);
                self.core.rearm(node, true);
                let detail = format!(
                    "{} wall clock steps {}",
                    self.core.name(node),
                    signed(delta_ns)
                );
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::ClockSlew {
                node,
                delta_ns,
                rate_ppm,
            } => {
                let now = self.core.now;
                let end = self.core.nodes[node.index()]
                    .clocks
                    .start_slew(now, delta_ns, rate_ppm);
                self.core.push(end, Action::EndSlew { node });
                self.core.rearm(node, true);
                let detail = format!(
                    "{} wall clock slews {} at {rate_ppm} ppm until {end}",
                    self.core.name(node),
                    signed(delta_ns)
                );
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::ClockDrift { node, drift_ppm } => {
                let now = self.core.now;
                self.core.nodes[node.index()]
                    .clocks
                    .set_drift(now, drift_ppm);
                self.core.rearm(node, false);
                let detail = format!("{} clocks drift {drift_ppm:+} ppm", self.core.name(node));
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::Delay {
                ref from,
                ref to,
                extra,
                duration,
            } => {
                let links: Vec<(NodeId, NodeId)> = from
                    .iter()
                    .flat_map(|&a| to.iter().map(move |&b| (a, b)))
                    .filter(|(a, b)| a != b)
                    .collect();
                for &(a, b) in &links {
                    self.core.links.add_extra(a, b, extra, true);
                }
                let id = self.core.next_id;
                self.core.next_id += 1;
                if let Some(d) = duration {
                    self.core
                        .push(self.core.now.saturating_add(d), Action::EndDelay { id });
                }
                let detail = format!(
                    "delay {} -> {} by {extra}{}",
                    self.core.names_of(from),
                    self.core.names_of(to),
                    duration.map(|d| format!(" for {d}")).unwrap_or_default()
                );
                let nodes = fault.nodes();
                self.core.log_fault(&fault, nodes, detail);
                self.core.delays.push(Delay {
                    id,
                    links,
                    extra,
                    fault,
                });
            }
            Fault::Degrade { .. } => self.degrade(fault),
            Fault::ClockStrobe { .. } => self.strobe(fault),
        }
    }

    fn pause(&mut self, node: NodeId, duration: Option<Dur>) {
        let now = self.core.now;
        let name = self.core.name(node).to_string();
        let fault = Fault::Pause { node, duration };
        let st = &mut self.core.nodes[node.index()];
        if st.status == Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("pause {name}: no effect, it is down"),
            );
            return;
        }
        // A pause during a pause lasts until the later of the two ends.
        let until = match (st.status, st.paused_until, duration) {
            (Status::Paused, None, _) | (_, _, None) => None,
            (Status::Paused, Some(old), Some(d)) => Some(old.max(now.saturating_add(d))),
            (_, _, Some(d)) => Some(now.saturating_add(d)),
        };
        st.status = Status::Paused;
        st.pause_generation = st.pause_generation.wrapping_add(1);
        st.paused_until = until;
        let generation = st.pause_generation;
        if let Some(t) = until {
            self.core.push(t, Action::TimedResume { node, generation });
        }
        let detail = match duration {
            Some(d) => format!("pause {name} for {d}"),
            None => format!("pause {name}"),
        };
        self.core.log_fault(&fault, vec![node], detail);
    }

    fn resume(&mut self, node: NodeId) {
        let name = self.core.name(node).to_string();
        let st = &mut self.core.nodes[node.index()];
        if st.status != Status::Paused {
            let fault = Fault::Resume { node };
            self.core.log_fault(
                &fault,
                vec![node],
                format!("resume {name}: no effect, not paused"),
            );
            return;
        }
        st.status = Status::Up;
        st.paused_until = None;
        let incarnation = st.incarnation;
        let mut waiting = std::mem::take(&mut st.deferred);
        let detail = format!("resume {name} ({} waiting events)", waiting.len());
        self.core
            .log_fault(&Fault::Resume { node }, vec![node], detail);
        // The backlog runs now, in the order it came due, before anything else that happens
        // at this instant. A handler of it may crash or pause the node again (a fault on a
        // mark): a crash loses the rest, a pause keeps it waiting, ahead of anything newer.
        while let Some(item) = waiting.pop_front() {
            let st = &mut self.core.nodes[node.index()];
            if st.incarnation != incarnation {
                return;
            }
            if st.status == Status::Paused {
                waiting.push_front(item);
                waiting.append(&mut st.deferred);
                st.deferred = waiting;
                return;
            }
            self.redeliver(node, item);
        }
    }

    fn crash(&mut self, node: NodeId, restart_after: Option<Dur>) {
        let name = self.core.name(node).to_string();
        let fault = Fault::Crash {
            node,
            restart_after,
        };
        if self.core.nodes[node.index()].status == Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("crash {name}: no effect, it is down"),
            );
            return;
        }
        let st = &mut self.core.nodes[node.index()];
        st.status = Status::Down;
        st.incarnation += 1;
        st.deferred.clear();
        st.paused_until = None;
        for slot in 0..self.core.timers.len() {
            let s = &self.core.timers[slot];
            if s.node == node && s.timer.is_some() {
                self.core.free_timer(slot as u32);
            }
        }
        self.procs[node.index()].on_crash();
        if let Some(d) = restart_after {
            let incarnation = self.core.nodes[node.index()].incarnation;
            self.core.push(
                self.core.now.saturating_add(d),
                Action::CrashRestart { node, incarnation },
            );
        }
        let detail = match restart_after {
            Some(d) => format!("crash {name}, restart after {d}"),
            None => format!("crash {name}"),
        };
        self.core.log_fault(&fault, vec![node], detail);
    }

    fn restart(&mut self, node: NodeId) {
        let name = self.core.name(node).to_string();
        let fault = Fault::Restart { node };
        let st = &mut self.core.nodes[node.index()];
        if st.status != Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("restart {name}: no effect, it is up"),
            );
            return;
        }
        st.status = Status::Up;
        st.incarnation += 1;
        self.core
            .log_fault(&fault, vec![node], format!("restart {name}"));
        self.dispatch(node, |p, ctx| p.on_restart(ctx));
    }

    /// Heals one partition, or all with `None`, and releases held messages on open links.
    fn heal(&mut self, id: Option<u32>) {
        let (healed, kept): (Vec<Partition>, Vec<Partition>) =
            std::mem::take(&mut self.core.partitions)
                .into_iter()
                .partition(|p| id.is_none_or(|id| p.id == id));
        self.core.partitions = kept;
        let mut nodes = Vec::new();
        for p in &healed {
            self.core.links.block(&p.links, p.mode, false);
            nodes.extend(cut_nodes(&p.links));
        }
        nodes.sort();
        nodes.dedup();
        if id.is_some() && healed.is_empty() {
            return; // Already healed by a heal-all.
        }
        let held = self.core.flush_held();
        let detail = format!(
            "heal {} partition(s), {held} held messages released",
            healed.len()
        );
        self.core.log_fault(&Fault::Heal, nodes, detail);
    }

    fn end_delay(&mut self, id: u32) {
        if let Some(pos) = self.core.delays.iter().position(|d| d.id == id) {
            let delay = self.core.delays.remove(pos);
            for &(a, b) in &delay.links {
                self.core.links.add_extra(a, b, delay.extra, false);
            }
            let detail = format!("delay of {} ends", delay.extra);
            let nodes = delay.fault.nodes();
            self.core.log(&delay.fault, nodes, detail, true);
        }
    }

    fn degrade(&mut self, fault: Fault) {
        let Fault::Degrade {
            ref from,
            ref to,
            loss_ppm,
            duplicate_ppm,
            duration,
        } = fault
        else {
            unreachable!("degrade() is given a degrade");
        };
        let links: Vec<(NodeId, NodeId)> = from
            .iter()
            .flat_map(|&a| to.iter().map(move |&b| (a, b)))
            .filter(|(a, b)| a != b)
            .collect();
        let id = self.core.next_id;
        self.core.next_id += 1;
        self.core
            .links
            .add_degrade(id, links, loss_ppm, duplicate_ppm);
        if let Some(d) = duration {
            self.core
                .push(self.core.now.saturating_add(d), Action::EndDegrade { id });
        }
        let detail = format!(
            "degrade {} -> {}: loss +{}, duplicate +{}{}",
            self.core.names_of(from),
            self.core.names_of(to),
            percent(loss_ppm),
            percent(duplicate_ppm),
            duration.map(|d| format!(" for {d}")).unwrap_or_default()
        );
        let nodes = fault.nodes();
        self.core.log_fault(&fault, nodes, detail);
        self.core.degrades.push(Degradation { id, fault });
    }

    fn end_degrade(&mut self, id: u32) {
        if let Some(pos) = self.core.degrades.iter().position(|d| d.id == id) {
            let degrade = self.core.degrades.remove(pos);
            assert!(self.core.links.remove_degrade(id), "degrade {id} in force");
            let detail = match &degrade.fault {
                Fault::Degrade { from, to, .. } => format!(
                    "degrade {} -> {} ends",
                    self.core.names_of(from),
                    self.core.names_of(to)
                ),
                other => unreachable!("a degrade, not {other:?}"),
            };
            let nodes = degrade.fault.nodes();
            self.core.log(&degrade.fault, nodes, detail, true);
        }
    }

    /// Starts a clock strobe: logs it and takes its first step now.
    fn strobe(&mut self, fault: Fault) {
        let Fault::ClockStrobe {
            node,
            delta_ns,
            period,
            duration,
        } = fault
        else {
            unreachable!("strobe() is given a clock strobe");
        };
        assert!(
            period > Dur::ZERO,
            "a clock strobe needs a positive period (the scenario loader checks it)"
        );
        let id = self.core.next_id;
        self.core.next_id += 1;
        let detail = format!(
            "{} wall clock strobes {} every {period} for {duration}",
            self.core.name(node),
            signed(delta_ns)
        );
        self.core.log_fault(&fault, vec![node], detail);
        let end = self.core.now.saturating_add(duration);
        self.core.strobes.push(Strobe {
            id,
            node,
            delta_ns,
            period,
            end,
            off: false,
            fault,
        });
        if self.core.now < end {
            self.strobe_step(id);
        } else {
            self.core.push(end, Action::EndStrobe { id });
        }
    }

    /// Takes one step of strobe `id` (away, or back) and schedules the next step, or the end
    /// when the next whole period would not fall before it.
    fn strobe_step(&mut self, id: u32) {
        let now = self.core.now;
        let s = self
            .core
            .strobes
            .iter_mut()
            .find(|s| s.id == id)
            .expect("a strobe step belongs to a strobe in progress");
        let delta = if s.off { -s.delta_ns } else { s.delta_ns };
        s.off = !s.off;
        let (node, next, end) = (s.node, now.saturating_add(s.period), s.end);
        self.step_wall(node, delta);
        if next < end {
            self.core.push(next, Action::StrobeStep { id });
        } else {
            self.core.push(end, Action::EndStrobe { id });
        }
    }

    /// Ends strobe `id`: steps the clock back if its last step left it off, and logs the end.
    fn end_strobe(&mut self, id: u32) {
        let pos = self
            .core
            .strobes
            .iter()
            .position(|s| s.id == id)
            .expect("a strobe ends once");
        let s = self.core.strobes.remove(pos);
        if s.off {
            self.step_wall(s.node, -s.delta_ns);
        }
        let detail = format!(
            "{} wall clock strobe ends, {}",
            self.core.name(s.node),
            if s.off {
                "stepped back"
            } else {
                "back already"
            }
        );
        self.core.log(&s.fault, vec![s.node], detail, true);
    }

    /// One step of a strobe: the wall clock moves and wall timers are re-armed, as for
    /// [`Fault::ClockStep`], whatever the node's status (the clock belongs to the machine).
    fn step_wall(&mut self, node: NodeId, delta_ns: i64) {
        let now = self.core.now;
        self.core.nodes[node.index()].clocks.step(now, delta_ns);
        self.core.rearm(node, true);
        self.core.hash_event(code::STROBE, (node, delta_ns));
        self.core.trace_line(TraceKind::Fault, node, |c| {
            format!(
                "{} wall clock strobe steps {}",
                c.name(node),
                signed(delta_ns)
            )
        });
    }

    fn describe_partition(
        &self,
        cut_off: &[NodeId],
        links: &[(NodeId, NodeId)],
        mode: PartitionMode,
        duration: Option<Dur>,
    ) -> String {
        let mode = match mode {
            PartitionMode::Drop => "drop",
            PartitionMode::Hold => "hold",
        };
        let until = duration.map(|d| format!(" for {d}")).unwrap_or_default();
        let blocked = if links.len() <= 6 {
            let arrows: Vec<String> = links
                .iter()
                .map(|&(a, b)| format!("{}->{}", self.core.name(a), self.core.name(b)))
                .collect();
            arrows.join(" ")
        } else {
            format!("{} links", links.len())
        };
        format!(
            "partition ({mode}){until}: cuts off {}, blocks {blocked}",
            self.core.names_of(cut_off)
        )
    }
}

/// The nodes on the sending or receiving end of any of `links`.
fn cut_nodes(links: &[(NodeId, NodeId)]) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = links.iter().flat_map(|&(a, b)| [a, b]).collect();
    v.sort();
    v.dedup();
    v
}

/// A chance in ppm as a percentage: `20%`, `0.5%`, `0.0001%`.
fn percent(ppm: u32) -> String {
    let (whole, frac) = (ppm / 10_000, ppm % 10_000);
    if frac == 0 {
        format!("{whole}%")
    } else {
        let frac = format!("{frac:04}");
        format!("{whole}.{}%", frac.trim_end_matches('0'))
    }
}

/// `+1.5s` or `-250ms`.
fn signed(delta_ns: i64) -> String {
    let sign = if delta_ns < 0 { '-' } else { '+' };
    format!("{sign}{}", Dur::from_nanos(delta_ns.unsigned_abs()))
}

impl<P: Process> World<P> {
    /// True time now.
    pub fn now(&self) -> Time {
        self.core.now
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.core.events
    }

    /// The trace hash so far: equal for equal runs, different for any change to what happened.
    pub fn trace_hash(&self) -> u64 {
        self.core.hasher.finish()
    }

    /// The readable trace, if tracing is on.
    pub fn trace(&self) -> Option<&[TraceEntry]> {
        self.core.trace.as_deref()
    }

    /// The history events recorded so far, in order.
    pub fn history(&self) -> &[Record<P::Event>] {
        &self.core.history
    }

    /// The observations emitted so far, in order ([`Env::observe`]).
    pub fn observations(&self) -> &[Record<P::Observation>] {
        &self.core.observations
    }

    /// Takes the observations out of the world.
    pub fn take_observations(&mut self) -> Vec<Record<P::Observation>> {
        std::mem::take(&mut self.core.observations)
    }

    /// Takes the recorded history out of the world.
    pub fn take_history(&mut self) -> Vec<Record<P::Event>> {
        std::mem::take(&mut self.core.history)
    }

    /// The faults applied so far, in order.
    pub fn fault_log(&self) -> &[AppliedFault] {
        &self.core.fault_log
    }

    /// A node's process.
    pub fn process(&self, node: NodeId) -> &P {
        &self.procs[node.index()]
    }

    /// A node's status.
    pub fn status(&self, node: NodeId) -> Status {
        self.core.nodes[node.index()].status
    }

    /// A node's clocks.
    pub fn clocks(&self, node: NodeId) -> &Clocks {
        &self.core.nodes[node.index()].clocks
    }

    /// Node names, by [`NodeId`].
    pub fn names(&self) -> &[String] {
        &self.core.names
    }

    /// The run's end time.
    pub fn end(&self) -> Time {
        self.core.end
    }
}
