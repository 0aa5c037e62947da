//! The environment a process runs in: the only way a model sees the world.
//!
//! A model is written against [`Env`], never against a host. Through it a process reads its
//! own clocks (local time, never true time), sends messages, sets and cancels timers on either
//! clock, draws from its own random stream, records history events, emits observations and
//! reaches named marks. The simulator's [`crate::Ctx`] is one host; another (a bridge to an
//! async runtime, a test harness) implements the same trait and runs the same models.
//!
//! History events are what the checker judges and are part of the run (hashed into the trace).
//! Observations are an observer's notes beside the history (who a server thinks holds the
//! lock, counts a report shows): kept by the host, never read by a model, never hashed.

use crate::clock::ClockKind;
use crate::rng::Rng;
use crate::time::{Dur, LocalTime};
use crate::world::{NodeId, Process, TimerId};

/// What a process can do and see.
pub trait Env {
    /// Messages this process sends.
    type Msg;
    /// Timers this process sets.
    type Timer;
    /// History events it records.
    type Event;
    /// Observations it emits.
    type Observation;

    /// This node.
    fn id(&self) -> NodeId;
    /// This node's name.
    fn name(&self) -> &str;
    /// This node's clock of the given kind.
    fn clock(&self, kind: ClockKind) -> LocalTime;
    /// This node's monotonic clock.
    fn mono(&self) -> LocalTime {
        self.clock(ClockKind::Mono)
    }
    /// This node's wall clock.
    fn wall(&self) -> LocalTime {
        self.clock(ClockKind::Wall)
    }
    /// Sends `msg` to `to` on this node's TCP connection to it: in order, exactly once, late
    /// if the network is cut (the kernel retransmits), lost only with the connection.
    fn send(&mut self, to: NodeId, msg: Self::Msg);
    /// Sends `msg` to `to` as a datagram (UDP; a keepalive probe): it may be lost, doubled or
    /// overtaken, and a partition in drop mode loses it.
    fn send_datagram(&mut self, to: NodeId, msg: Self::Msg);
    /// Sets a timer that fires when this node's `clock` has advanced by `after`.
    fn set_timer(&mut self, clock: ClockKind, after: Dur, timer: Self::Timer) -> TimerId {
        let deadline = self.clock(clock) + after;
        self.set_timer_at(clock, deadline, timer)
    }
    /// Sets a timer that fires when this node's `clock` reads `deadline` (at once if it
    /// already does).
    fn set_timer_at(
        &mut self,
        clock: ClockKind,
        deadline: LocalTime,
        timer: Self::Timer,
    ) -> TimerId;
    /// Cancels a timer; false if it already fired or was cancelled.
    fn cancel_timer(&mut self, id: TimerId) -> bool;
    /// This node's own random stream.
    fn rng(&mut self) -> &mut Rng;
    /// Records a history event at the current instant.
    fn record(&mut self, event: Self::Event);
    /// Emits an observation at the current instant.
    fn observe(&mut self, observation: Self::Observation);
    /// Reaches the named mark: a point where real code could be interrupted. Faults scheduled
    /// on this mark are applied right after the current handler returns.
    fn mark(&mut self, mark: &'static str);
}

/// An [`Env`] whose types are those of process `P`: what `P`'s handlers receive.
pub trait EnvOf<P: Process>:
    Env<Msg = P::Msg, Timer = P::Timer, Event = P::Event, Observation = P::Observation>
{
}

impl<P: Process, E> EnvOf<P> for E where
    E: Env<Msg = P::Msg, Timer = P::Timer, Event = P::Event, Observation = P::Observation>
{
}
