//! The event queue and the state every layer shares.
//!
//! The queue holds (true time, sequence number, slot) entries; each action waits in its slot
//! of `Core::actions`. `Core` also holds the nodes' states, the timers (re-armed when a
//! node's clock changes), the history, and the trace: every event is folded into the hash by
//! `Core::hash_event`, and readable lines are kept when tracing is on.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::hash::{Hash, Hasher};

use super::delivery::{Deferred, Delivery, Held, Stream};
use super::faults::{Timed, Trigger, Triggers};
use super::{NodeId, Process, Record, Status, TimerId};
use crate::clock::{ClockKind, Clocks};
use crate::fault::{AppliedFault, Fault};
use crate::net::Links;
use crate::rng::Rng;
use crate::time::{LocalTime, Time};
use crate::trace::{TraceEntry, TraceHasher, TraceKind};

pub(super) struct NodeState<P: Process> {
    pub(super) status: Status,
    /// Bumped on every pause so that a stale timed resume is ignored.
    pub(super) pause_generation: u32,
    /// Bumped when the node goes from running to paused, so that a watchdog set at an earlier
    /// stall is ignored.
    pub(super) stalls: u32,
    /// Its supervisor, if it has one.
    pub(super) watchdog: Option<crate::world::Watchdog>,
    pub(super) paused_until: Option<Time>,
    /// The whole host is frozen (a paused VM, a hung host): nothing reaches it or answers.
    pub(super) frozen: bool,
    /// Bumped on every freeze so that a stale timed thaw is ignored.
    pub(super) freeze_generation: u32,
    /// Bumped on crash and on restart: messages addressed to an older incarnation are lost.
    pub(super) incarnation: u32,
    pub(super) clocks: Clocks,
    pub(super) rng: Rng,
    /// Messages and timers that came due while paused, in order.
    pub(super) deferred: VecDeque<Deferred<P>>,
    /// Occurrences of each mark so far.
    pub(super) marks: Vec<(&'static str, u32)>,
}

pub(super) struct TimerSlot<T> {
    pub(super) generation: u32,
    /// Bumped on every re-arm so that queue entries of an earlier arming are ignored.
    pub(super) arming: u32,
    pub(super) node: NodeId,
    pub(super) clock: ClockKind,
    pub(super) deadline: LocalTime,
    /// `Some` while the timer is pending.
    pub(super) timer: Option<T>,
    /// The timer came due while its node was paused and waits in `deferred`.
    pub(super) deferred: bool,
}

/// What happens at an entry of the queue.
pub(super) enum Action<P: Process> {
    Start {
        node: NodeId,
    },
    Deliver(Delivery<P::Msg>),
    Timer {
        id: TimerId,
        arming: u32,
    },
    Fault(Fault),
    /// Aimed fault `id` comes due (`roles.rs`).
    Aim {
        id: u32,
    },
    /// The next step of timed fault `id` (a clock strobe).
    Step {
        id: u32,
    },
    /// The end of timed fault `id`, whatever its kind.
    End {
        id: u32,
    },
    /// The retransmission timer of the connection `from → to` fires, if `generation` is
    /// still its own.
    Retransmit {
        from: NodeId,
        to: NodeId,
        generation: u32,
    },
    /// `to`'s connection to `from` is reset: `from` crashed, or refused a message because it
    /// is down or a new incarnation. Meant for `to`'s incarnation `to_incarnation`.
    Reset {
        from: NodeId,
        to: NodeId,
        to_incarnation: u32,
    },
}

/// A place in the event queue: when, in what order, and the slot of [`Core::actions`] that
/// holds the action. The heap moves only these small keys while the actions (a message can
/// be large) stay put, so a push or pop costs a few 32-byte moves instead of copies of the
/// whole action at every level of the heap.
///
/// (true time, sequence number) is one `u128`, so that a comparison in the heap's sift is a
/// subtract and a flag, not two data-dependent branches; and it is the first field, so each
/// move writes the key as one 16-byte store that the next comparison reads back whole (with
/// the 24-byte `(time, seq, slot)` layout a sift's read of the moved entry spanned two stores
/// and stalled on store forwarding: a fifth of a pop's time).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    /// True time in the high 64 bits, the sequence number in the low: unique per entry.
    key: u128,
    pub(super) slot: u32,
}

impl Entry {
    #[inline]
    fn new(time: Time, seq: u64, slot: u32) -> Entry {
        Entry {
            key: (u128::from(time.as_nanos()) << 64) | u128::from(seq),
            slot,
        }
    }

    /// When the entry comes due, in true time.
    #[inline]
    pub(super) fn time(&self) -> Time {
        Time::from_nanos((self.key >> 64) as u64)
    }
}

impl PartialOrd for Entry {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
    #[inline]
    fn lt(&self, other: &Self) -> bool {
        other.key < self.key
    }
    #[inline]
    fn le(&self, other: &Self) -> bool {
        other.key <= self.key
    }
    #[inline]
    fn gt(&self, other: &Self) -> bool {
        other.key > self.key
    }
    #[inline]
    fn ge(&self, other: &Self) -> bool {
        other.key >= self.key
    }
}
impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` pops the earliest (time, seq) first. Sequence numbers
    /// are unique, so the slot never decides.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

pub(super) struct Core<P: Process> {
    pub(super) now: Time,
    pub(super) seq: u64,
    pub(super) queue: BinaryHeap<Entry>,
    /// The actions of the queue's entries, by slot; `None` in a free slot.
    pub(super) actions: Vec<Option<Action<P>>>,
    /// Slots of `actions` free for reuse.
    pub(super) free_actions: Vec<u32>,
    pub(super) names: Vec<String>,
    pub(super) nodes: Vec<NodeState<P>>,
    pub(super) timers: Vec<TimerSlot<P::Timer>>,
    pub(super) free_timers: Vec<u32>,
    pub(super) links: Links,
    pub(super) held: BTreeMap<(NodeId, NodeId), VecDeque<Held<P::Msg>>>,
    /// Every directed link's TCP state, `n × n` by (from, to).
    pub(super) streams: Vec<Stream<P::Msg>>,
    /// The hosts' TCP.
    pub(super) tcp: crate::net::TcpConfig,
    /// Open connections, `n × n` by (node, peer), set both ways when a message arrives:
    /// a crash resets each of its node's, telling the peer.
    pub(super) connected: Vec<bool>,
    /// Resets that reached a blocked hold-mode link, (from, to, to's incarnation), released
    /// by the heal like held messages.
    pub(super) held_resets: Vec<(NodeId, NodeId, u32)>,
    /// The latencies of resets, from a stream of their own, so the rest of the network draws
    /// the same numbers whether or not a process crashed.
    pub(super) reset_rng: Rng,
    /// The timed faults in force, in the order they were applied.
    pub(super) timed: Vec<Timed>,
    /// The id of the next timed fault.
    pub(super) next_id: u32,
    /// Messages sent so far.
    pub(super) sends: u64,
    pub(super) net_rng: Rng,
    pub(super) fault_rng: Rng,
    pub(super) triggers: Triggers,
    /// Triggers whose occurrence came after they lapsed: they fired nothing.
    pub(super) lapsed: Vec<Trigger>,
    /// Faults scheduled so far (timed or triggered): the next one's index.
    pub(super) scheduled: usize,
    /// Faults whose triggers fired in the handler running, applied when it returns; an
    /// aimed one by its id in `roles`.
    pub(super) fired: Vec<(Fault, Option<u32>)>,
    /// The roles faults are aimed at (`roles.rs`).
    pub(super) roles: super::roles::Roles,
    /// The role of the aimed fault being applied, which its log entry names.
    pub(super) aiming: Option<String>,
    pub(super) fault_log: Vec<AppliedFault>,
    pub(super) history: Vec<Record<P::Event>>,
    /// Observations, beside the history: kept, never hashed.
    pub(super) observations: Vec<Record<P::Observation>>,
    pub(super) hasher: TraceHasher,
    pub(super) trace: Option<Vec<TraceEntry>>,
    /// What the kept trace lines cost, as the memory budget counts them.
    pub(super) trace_bytes: u64,
    /// Faults scheduled at a time and not yet applied (in the queue).
    pub(super) pending_faults: usize,
    pub(super) events: u64,
    pub(super) end: Time,
    pub(super) max_events: u64,
    pub(super) memory_budget: u64,
    pub(super) interrupt: Option<super::Interrupt>,
    /// Queue entries taken so far: the budgets are checked every `CHECK_EVERY` of them.
    pub(super) polls: u64,
}

/// Trace codes folded into the hash ahead of each event's own data.
pub(super) mod code {
    pub(in crate::world) const START: u8 = 1;
    pub(in crate::world) const DELIVER: u8 = 2;
    pub(in crate::world) const TIMER: u8 = 3;
    pub(in crate::world) const FAULT: u8 = 4;
    pub(in crate::world) const RECORD: u8 = 5;
    pub(in crate::world) const MARK: u8 = 6;
    pub(in crate::world) const DROP: u8 = 7;
    pub(in crate::world) const HOLD: u8 = 8;
    pub(in crate::world) const DEFER: u8 = 9;
    pub(in crate::world) const STROBE: u8 = 10;
    pub(in crate::world) const RESET: u8 = 11;
    pub(in crate::world) const STALL: u8 = 12;
    pub(in crate::world) const RETRANSMIT: u8 = 13;
    pub(in crate::world) const ABORT: u8 = 14;
    pub(in crate::world) const KERNEL: u8 = 15;
    pub(in crate::world) const THAW: u8 = 16;
}

impl<P: Process> Core<P> {
    pub(super) fn push(&mut self, time: Time, action: Action<P>) {
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
        self.queue.push(Entry::new(time, self.seq, slot));
    }

    /// Folds one event into the trace hash: its time, its code and its data.
    #[inline]
    pub(super) fn hash_event(&mut self, code: u8, data: impl Hash) {
        self.hasher.write_u64(self.now.as_nanos());
        self.hasher.write_u8(code);
        data.hash(&mut self.hasher);
    }

    pub(super) fn trace_line(
        &mut self,
        kind: TraceKind,
        node: NodeId,
        text: impl FnOnce(&Self) -> String,
    ) {
        if self.trace.is_none() {
            return;
        }
        let entry = TraceEntry {
            time: self.now,
            kind,
            node,
            text: text(self),
        };
        let text_bytes = entry.text.len() as u64;
        self.trace_bytes = self
            .trace_bytes
            .saturating_add(super::memory::TRACE_LINE + 4 * text_bytes);
        if let Some(trace) = &mut self.trace {
            trace.push(entry);
        }
    }

    pub(super) fn name(&self, node: NodeId) -> &str {
        &self.names[node.index()]
    }

    pub(super) fn set_timer(
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

    pub(super) fn live_timer(&self, id: TimerId) -> Option<&TimerSlot<P::Timer>> {
        self.timers
            .get(id.slot as usize)
            .filter(|s| s.generation == id.generation && s.timer.is_some())
    }

    pub(super) fn free_timer(&mut self, slot: u32) {
        let s = &mut self.timers[slot as usize];
        s.timer = None;
        s.deferred = false;
        s.generation = s.generation.wrapping_add(1);
        self.free_timers.push(slot);
    }

    pub(super) fn cancel_timer(&mut self, node: NodeId, id: TimerId) -> bool {
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
    pub(super) fn rearm(&mut self, node: NodeId, wall_only: bool) {
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

    pub(super) fn record(&mut self, node: NodeId, event: P::Event) {
        self.hash_event(code::RECORD, (node, &event));
        self.trace_line(TraceKind::Record, node, |_| format!("{event:?}"));
        self.history.push(Record {
            time: self.now,
            node,
            event,
        });
    }
}
