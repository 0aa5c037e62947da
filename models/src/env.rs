//! The environment models are written against: [`lockstep_sim::Env`] with lockstep's history
//! and observations, under the message and timer types of the part of a node that uses it.
//!
//! A node of a world is a family's service node, the storage or a workload client with its
//! lock client ([`crate::node::Node`]); the world's messages and timers wrap each part's own
//! ([`crate::node::Msg`], [`crate::node::Timer`]). Each part sees an environment in its own
//! types, a [`Scoped`] view of the node's, so a family's code never names the wrapping and no
//! model names a host.

use std::marker::PhantomData;

use lockstep_check::Event;
use lockstep_sim::{ClockKind, Dur, Env, LocalTime, NodeId, Rng, TimerId};

use crate::node::{Msg, Timer};
use crate::observe::Observation;

/// An environment that sends `M` and sets timers `T`: what a model's handlers take.
pub trait Host<M, T>: Env<Msg = M, Timer = T, Event = Event, Observation = Observation> {}

impl<M, T, E> Host<M, T> for E where
    E: Env<Msg = M, Timer = T, Event = Event, Observation = Observation>
{
}

/// Which part of a node a [`Scoped`] environment serves: how its messages and timers are
/// wrapped in the node's.
pub trait Side {
    /// The node's messages.
    type OuterMsg;
    /// The node's timers.
    type OuterTimer;
    /// The part's messages.
    type Msg;
    /// The part's timers.
    type Timer;
    /// Wraps a message of the part.
    fn msg(msg: Self::Msg) -> Self::OuterMsg;
    /// Wraps a timer of the part.
    fn timer(timer: Self::Timer) -> Self::OuterTimer;
}

/// The service side of a node of family protocol `M`: service messages and timers `S`.
#[derive(Debug)]
pub struct ServiceSide<M, S, L>(PhantomData<fn(M, S, L)>);

impl<M, S, L> Side for ServiceSide<M, S, L> {
    type OuterMsg = Msg<M>;
    type OuterTimer = Timer<S, L>;
    type Msg = M;
    type Timer = S;
    #[inline]
    fn msg(msg: M) -> Msg<M> {
        Msg::Service(msg)
    }
    #[inline]
    fn timer(timer: S) -> Timer<S, L> {
        Timer::Service(timer)
    }
}

/// The lock-client side of a workload client: the family's messages and the lock's timers
/// `L`.
#[derive(Debug)]
pub struct LockSide<M, S, L>(PhantomData<fn(M, S, L)>);

impl<M, S, L> Side for LockSide<M, S, L> {
    type OuterMsg = Msg<M>;
    type OuterTimer = Timer<S, L>;
    type Msg = M;
    type Timer = L;
    #[inline]
    fn msg(msg: M) -> Msg<M> {
        Msg::Service(msg)
    }
    #[inline]
    fn timer(timer: L) -> Timer<S, L> {
        Timer::Lock(timer)
    }
}

/// A node's environment seen by one part of it: the part's messages and timers go out
/// wrapped as the node's; everything else is the node's own.
#[derive(Debug)]
pub struct Scoped<'a, E, S> {
    env: &'a mut E,
    side: PhantomData<S>,
}

impl<'a, E, S> Scoped<'a, E, S> {
    /// `env` as seen by the part `S`.
    #[inline]
    pub fn new(env: &'a mut E) -> Scoped<'a, E, S> {
        Scoped {
            env,
            side: PhantomData,
        }
    }
}

impl<E, S> Env for Scoped<'_, E, S>
where
    E: Env,
    S: Side<OuterMsg = E::Msg, OuterTimer = E::Timer>,
{
    type Msg = S::Msg;
    type Timer = S::Timer;
    type Event = E::Event;
    type Observation = E::Observation;

    #[inline]
    fn id(&self) -> NodeId {
        self.env.id()
    }
    #[inline]
    fn name(&self) -> &str {
        self.env.name()
    }
    #[inline]
    fn clock(&self, kind: ClockKind) -> LocalTime {
        self.env.clock(kind)
    }
    #[inline]
    fn mono(&self) -> LocalTime {
        self.env.mono()
    }
    #[inline]
    fn wall(&self) -> LocalTime {
        self.env.wall()
    }
    #[inline]
    fn send(&mut self, to: NodeId, msg: S::Msg) {
        self.env.send(to, S::msg(msg));
    }
    #[inline]
    fn send_datagram(&mut self, to: NodeId, msg: S::Msg) {
        self.env.send_datagram(to, S::msg(msg));
    }
    #[inline]
    fn set_timer(&mut self, clock: ClockKind, after: Dur, timer: S::Timer) -> TimerId {
        self.env.set_timer(clock, after, S::timer(timer))
    }
    #[inline]
    fn set_timer_at(&mut self, clock: ClockKind, deadline: LocalTime, timer: S::Timer) -> TimerId {
        self.env.set_timer_at(clock, deadline, S::timer(timer))
    }
    #[inline]
    fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.env.cancel_timer(id)
    }
    #[inline]
    fn rng(&mut self) -> &mut Rng {
        self.env.rng()
    }
    #[inline]
    fn record(&mut self, event: E::Event) {
        self.env.record(event);
    }
    #[inline]
    fn observe(&mut self, observation: E::Observation) {
        self.env.observe(observation);
    }
    #[inline]
    fn mark(&mut self, mark: &'static str) {
        self.env.mark(mark);
    }
}
