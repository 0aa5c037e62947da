//! The world: the event loop that owns every nondeterministic choice, and the `Process` trait
//! through which models see it.
//!
//! A model node is a plain struct implementing [`Process`]. Its handlers receive an [`Env`]
//! (here the world's [`Ctx`]) and can only read their own clocks (local time, never true time),
//! send messages, set and cancel timers on either clock, draw from their own random stream,
//! record history events, emit observations and reach named marks. Everything else —
//! delivery delay, loss, duplication, partitions, clock rates and steps, pauses, crashes — is
//! decided here, from the run's seed and its fault schedule.
//!
//! Events are ordered by (true time, sequence number). Every run is bounded by an end time and
//! a maximum number of events; running out of events is the explicit [`Outcome::Exhausted`].
//! Start reading at [`World::run`] and [`World::handle`]. The layers under them are in
//! `world/`: `queue.rs` the event queue and the state every layer shares (timers, the trace
//! hash), `delivery.rs` a message from send to handler, `faults.rs` what each fault does.

mod delivery;
mod faults;
mod queue;
mod roles;

use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::clock::{ClockKind, Clocks};
use crate::env::{Env, EnvOf};
use crate::fault::{AppliedFault, ScheduledFault, Unfired, Unreached, When};
use crate::net::{LinkConfig, Links, TcpConfig};
use crate::rng::Rng;
use crate::time::{LocalTime, Time};
use crate::trace::{TraceEntry, TraceHasher, TraceKind};

use delivery::Stream;
use faults::{Trigger, Triggers};
use queue::{Action, Core, NodeState, code};

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
    /// The node is told to stop (SIGTERM, [`Fault::Terminate`]): it may release what it
    /// holds and stop its work before the world kills it. By default nothing happens: it is
    /// killed when the grace ends.
    fn on_terminate(&mut self, env: &mut impl EnvOf<Self>) {
        let _ = env;
    }
    /// This node's connection to `peer` was reset: `peer`'s process crashed (its host's FIN
    /// or RST arrived), a message to it was refused because it is down or restarted since (a
    /// connect refused, a stale connection), or this host's retransmissions to it ran out
    /// (`ETIMEDOUT`). A pause resets nothing, nor does a partition until the retransmissions
    /// run out. Requests in flight to `peer` will not be answered. By default nothing happens:
    /// the node learns only from its own timeouts.
    fn on_reset(&mut self, env: &mut impl EnvOf<Self>, peer: NodeId) {
        let _ = (env, peer);
    }
    /// What this host's kernel answers to `msg` from `from` on the process's behalf, if it is
    /// a message the kernel answers (a TCP keepalive probe): the answer is sent back as a
    /// datagram and the process never sees `msg`, whether it runs or is paused (a paused
    /// process's kernel still answers; a frozen host's does not, as nothing reaches it). It
    /// may read only what the kernel knows (which connections are open), never change state.
    /// By default the kernel answers nothing.
    fn kernel_answer(&self, from: NodeId, msg: &Self::Msg) -> Option<Self::Msg> {
        let _ = (from, msg);
        None
    }
    /// What this process holds that grows as the run goes on (a replicated log, a key's
    /// history, a table of finished work), in bytes at fixed sizes per item (see [`memory`]),
    /// for the memory budget: a function of the process's state alone, never of the
    /// allocator. Its fixed-size state is not counted. By default nothing grows.
    fn held_bytes(&self) -> u64 {
        0
    }

    /// Whether the process plays `role` now, by its own state (a Raft leader, a Redis
    /// primary, a client in its critical section): what a fault aimed at a role
    /// ([`ScheduledFault::role`]) hits. The world asks only while such a fault is scheduled,
    /// and only after one of the node's handlers ran or it crashed. By default, no role.
    fn plays(&self, role: &str) -> bool {
        let _ = role;
        false
    }
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
    /// The run's estimate of the memory it holds ([`World::memory_estimate`]) passed its
    /// budget at this true time: deterministic, like the event bound.
    OverMemory {
        /// True time of the last event handled.
        at: Time,
        /// The estimate, in bytes, when it was found over the budget.
        bytes: u64,
    },
    /// The host's [`Interrupt`] stopped the run at this true time (a wall-clock budget): not
    /// a function of the seed, so another run of the same seed may end elsewhere.
    Interrupted {
        /// True time of the last event handled.
        at: Time,
    },
}

/// A question the world asks its host every [`CHECK_EVERY`] events, with the true time it has
/// reached: stop now? The host's answer may depend on anything (a wall-clock deadline), and
/// it may note the time (a progress bar); the run's events never depend on it, so a run that
/// is not stopped is the same run as without it.
#[derive(Clone)]
pub struct Interrupt(pub Arc<dyn Fn(Time) -> bool + Send + Sync>);

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Interrupt")
    }
}

/// How often (in queue entries taken) the world checks its memory budget and asks its
/// [`Interrupt`].
pub const CHECK_EVERY: u64 = 1024;

/// The fixed sizes [`World::memory_estimate`] counts, in bytes: what each costs the process
/// over a run, on a 64-bit platform with its allocation, including the copies made of it after
/// the run (the checker's history, the report) — measured, then rounded up, so that the
/// budget bounds the process's peak resident memory (docs/scenarios.md, `memory_budget_mb`).
pub mod memory {
    /// An event slot: a pending event (its queue entry and its action, a message with its
    /// payload) or a held or deferred message. The queue keeps every slot it ever used, so
    /// the most events ever pending are counted, not the number pending now.
    pub const EVENT: u64 = 256;
    /// A timer slot.
    pub const TIMER: u64 = 48;
    /// A fault: one scheduled and not yet applied (the host's schedule, the copy the world was
    /// given, its slot), a fault waiting for its mark or aimed at a role, a timed fault in
    /// force, or one in the fault log (with its nodes, its description and its history event).
    pub const FAULT: u64 = 512;
    /// A history record: the world's, the checker's copy and what the checker builds of it.
    pub const RECORD: u64 = 192;
    /// An observation.
    pub const OBSERVATION: u64 = 48;
    /// A line of the readable trace, kept only when asked for, besides its text: the text
    /// is counted four times (the line, its rendering, and the JSON report that prints it,
    /// escaped).
    pub const TRACE_LINE: u64 = 192;
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
    /// A supervisor outside the node that kills it when it stops answering.
    pub watchdog: Option<Watchdog>,
}

/// A supervisor that kills a node unresponsive for too long (systemd's `WatchdogSec`, a
/// Kubernetes liveness probe's `periodSeconds × failureThreshold`): a node paused for `after`
/// without a break is crashed then, and restarted `restart_after` later if given. The
/// supervisor is not the node: a pause does not stop it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Watchdog {
    /// How long the node may be unresponsive.
    pub after: crate::Dur,
    /// The restart after the kill; `None` leaves it down.
    pub restart_after: Option<crate::Dur>,
}

impl NodeConfig {
    /// A node with perfect clocks.
    pub fn named(name: impl Into<String>) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            drift_ppm: 0,
            wall_offset_ns: 0,
            mono_start: None,
            watchdog: None,
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
    /// The hosts' TCP: when a connection whose segments get no acknowledgement is aborted.
    pub tcp: TcpConfig,
    /// The nodes, in [`NodeId`] order.
    pub nodes: Vec<NodeConfig>,
    /// The fault schedule.
    pub faults: Vec<ScheduledFault>,
    /// The most bytes the run may hold by [`World::memory_estimate`] before it is cut off.
    pub memory_budget: u64,
    /// Asked every [`CHECK_EVERY`] events whether to stop (the host's wall-clock budget).
    pub interrupt: Option<Interrupt>,
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
            tcp: TcpConfig::default(),
            nodes,
            faults: Vec::new(),
            memory_budget: u64::MAX,
            interrupt: None,
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

    fn send_datagram(&mut self, to: NodeId, msg: P::Msg) {
        self.core.send_datagram(self.node, to, msg);
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
                    stalls: 0,
                    watchdog: nc.watchdog,
                    paused_until: None,
                    frozen: false,
                    freeze_generation: 0,
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
            streams: (0..n * n).map(|_| Stream::default()).collect(),
            tcp: config.tcp,
            connected: vec![false; n * n],
            held_resets: Vec::new(),
            reset_rng: Rng::fork(config.seed, "network/resets"),
            timed: Vec::new(),
            next_id: 0,
            sends: 0,
            net_rng: Rng::fork(config.seed, "network"),
            fault_rng: Rng::fork(config.seed, "faults"),
            triggers: Triggers::default(),
            lapsed: Vec::new(),
            scheduled: 0,
            fired: Vec::new(),
            roles: roles::Roles::default(),
            aiming: None,
            fault_log: Vec::new(),
            history: Vec::with_capacity(history_hint::get()),
            observations: Vec::new(),
            hasher: TraceHasher::new(),
            trace: config.trace.then(Vec::new),
            trace_bytes: 0,
            pending_faults: 0,
            events: 0,
            end: config.end,
            max_events: config.max_events,
            memory_budget: config.memory_budget,
            interrupt: config.interrupt,
            polls: 0,
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
        let index = self.core.scheduled;
        self.core.scheduled += 1;
        let at = match &sf.when {
            When::At(t) => Some(*t),
            When::OnMark { .. } => None,
        };
        let aim = sf
            .role
            .as_deref()
            .map(|role| self.add_aimed(index, role, sf.fault.clone(), at));
        match sf.when {
            When::At(_) if aim.is_some() => {}
            When::At(t) => {
                self.core.pending_faults += 1;
                self.core
                    .push(t.max(self.core.now), Action::Fault(sf.fault));
            }
            When::OnMark {
                node,
                mark,
                occurrence,
                before,
            } => {
                self.core.triggers.push(Trigger {
                    index,
                    node,
                    mark,
                    occurrence,
                    before,
                    fault: sf.fault,
                    aim,
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
                Some(e) if e.time() <= until => {}
                _ => break,
            }
            if self.core.events >= self.core.max_events {
                return Outcome::Exhausted { at: self.core.now };
            }
            if self.core.polls % CHECK_EVERY == 0 {
                let bytes = self.memory_estimate();
                if bytes > self.core.memory_budget {
                    return Outcome::OverMemory {
                        at: self.core.now,
                        bytes,
                    };
                }
                if self
                    .core
                    .interrupt
                    .as_ref()
                    .is_some_and(|i| (i.0)(self.core.now))
                {
                    return Outcome::Interrupted { at: self.core.now };
                }
            }
            self.core.polls += 1;
            let entry = self.core.queue.pop().expect("peeked");
            let action = self.core.actions[entry.slot as usize]
                .take()
                .expect("a queued entry's slot holds its action");
            self.core.free_actions.push(entry.slot);
            self.core.now = entry.time();
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
                self.core.pending_faults -= 1;
                self.core.events += 1;
                self.apply(fault);
            }
            Action::Aim { id } => {
                self.core.events += 1;
                self.aim(id);
            }
            Action::Step { id } => {
                self.core.events += 1;
                self.strobe_step(id);
            }
            // An event unless the end is stale (see `end_timed`).
            Action::End { id } => self.end_timed(id),
            Action::Retransmit {
                from,
                to,
                generation,
            } => self.retransmit(from, to, generation),
            Action::Reset {
                from,
                to,
                to_incarnation,
            } => {
                self.core.events += 1;
                self.reset_arrives(from, to, to_incarnation);
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
        self.poll_roles(node);
        while !self.core.fired.is_empty() {
            let fired = std::mem::take(&mut self.core.fired);
            for (fault, aim) in fired {
                match aim {
                    Some(id) => self.aim(id),
                    None => self.apply(fault),
                }
            }
        }
    }
}

impl<P: Process> Drop for World<P> {
    fn drop(&mut self) {
        history_hint::note(self.core.history.len());
    }
}

/// How long the last history this thread recorded was: a new world reserves about that much
/// room for its own, so that a sweep's worker, running seed after seed of one scenario, does
/// not grow each run's history by doubling from empty. The growth (each step copies the whole
/// history, in fresh pages the kernel has to fault in) was about 5% of a Redlock sweep's CPU.
///
/// Only the vector's capacity depends on it: what a run does, its hash and its memory estimate
/// (which counts records, not capacity) are the same whatever ran on the thread before.
mod history_hint {
    use std::cell::Cell;

    /// The most records reserved up front, so that one long run cannot make every later
    /// world on its thread hold a large allocation it may not need.
    const MAX: usize = 1 << 16;

    thread_local! {
        static LAST: Cell<usize> = const { Cell::new(0) };
    }

    /// The capacity for a new history: the last length with a quarter's margin, so that a
    /// run a little longer than the last one does not double its vector at the end.
    pub(super) fn get() -> usize {
        let last = LAST.with(Cell::get);
        (last + last / 4).min(MAX)
    }

    /// Notes the length of a finished history; an empty one (already taken) says nothing.
    pub(super) fn note(len: usize) {
        if len > 0 {
            LAST.with(|l| l.set(len));
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_hint_follows_the_last_history_with_a_margin_and_a_ceiling() {
            // Nothing else runs on this thread between a note and its reading.
            note(4000);
            assert_eq!(get(), 5000);
            note(0);
            assert_eq!(get(), 5000, "a taken history says nothing");
            note(10 * MAX);
            assert_eq!(get(), MAX);
        }
    }
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

    /// What the run holds, in bytes, as the memory budget counts it: event slots (the most
    /// ever pending), timers, held and deferred messages, scheduled, waiting, timed and
    /// applied faults, the history, the observations, what the processes hold that grows
    /// ([`Process::held_bytes`]) and, when it is kept, the readable trace, each at a fixed
    /// size ([`memory`]). Fixed sizes (not `size_of`, not the allocator) make it a function of
    /// the run alone, the same on every platform and build; only keeping the trace adds to it.
    pub fn memory_estimate(&self) -> u64 {
        let c = &self.core;
        let held: usize = c.held.values().map(VecDeque::len).sum::<usize>()
            + c.held_resets.len()
            + c.streams.iter().map(|s| s.stalled()).sum::<usize>();
        let deferred: usize = c.nodes.iter().map(|n| n.deferred.len()).sum();
        let faults =
            c.pending_faults + c.triggers.len() + c.roles.len() + c.timed.len() + c.fault_log.len();
        let n = |len: usize, bytes: u64| (len as u64).saturating_mul(bytes);
        let processes = self
            .procs
            .iter()
            .fold(0u64, |sum, p| sum.saturating_add(p.held_bytes()));
        n(c.actions.len() + held + deferred, memory::EVENT)
            .saturating_add(n(c.timers.len(), memory::TIMER))
            .saturating_add(n(faults, memory::FAULT))
            .saturating_add(n(c.history.len(), memory::RECORD))
            .saturating_add(n(c.observations.len(), memory::OBSERVATION))
            .saturating_add(c.trace_bytes)
            .saturating_add(processes)
    }

    /// The trace hash so far: equal for equal runs, different for any change to what happened.
    pub fn trace_hash(&self) -> u64 {
        self.core.hasher.finish()
    }

    /// The readable trace, if tracing is on.
    pub fn trace(&self) -> Option<&[TraceEntry]> {
        self.core.trace.as_deref()
    }

    /// Takes the readable trace out of the world, if tracing is on.
    pub fn take_trace(&mut self) -> Option<Vec<TraceEntry>> {
        self.core.trace.take()
    }

    /// Takes the fault log out of the world ([`World::fault_log`] is empty after it).
    pub fn take_fault_log(&mut self) -> Vec<AppliedFault> {
        std::mem::take(&mut self.core.fault_log)
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
        history_hint::note(self.core.history.len());
        std::mem::take(&mut self.core.history)
    }

    /// The faults scheduled on a mark that have not fired (so far, or at all once the run is
    /// over), in the order they were scheduled: a trigger still waiting, or one that lapsed.
    /// Reading them changes nothing in the run.
    pub fn unfired(&self) -> Vec<Unfired> {
        let mut unfired: Vec<Unfired> = self
            .core
            .triggers
            .iter()
            .chain(&self.core.lapsed)
            .map(|t| Unfired {
                index: t.index,
                why: Unreached::Mark {
                    node: t.node,
                    mark: t.mark.clone(),
                    occurrence: t.occurrence,
                    reached: self.core.nodes[t.node.index()]
                        .marks
                        .iter()
                        .find(|(m, _)| *m == t.mark)
                        .map_or(0, |&(_, n)| n),
                    lapsed: t.before.filter(|&b| b <= self.core.now),
                },
            })
            .chain(self.core.roles.unfired())
            .collect();
        unfired.sort_by_key(|u| u.index);
        unfired
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
