//! The process type of a world of one lock family: every node is one of the family's service
//! nodes, the storage, or a workload client with the family's lock client.
//!
//! The world's messages and timers wrap the parts' own: a family's protocol ([`Msg::Service`])
//! between its service and its lock clients, storage's requests and replies, the service's
//! timers, the lock clients' and the workload's. Dispatch on the family happens once, when a
//! run builds its world; inside, every handler is the family's own, in its own types.

use lockstep_check::Event;
use lockstep_sim::{EnvOf, NodeId, Process, TimerId};

use crate::env::{LockSide, Scoped, ServiceSide};
use crate::family::{Family, Service};
use crate::lock::LockClient;
use crate::observe::Observation;
use crate::storage::{Storage, StorageReply, StorageRequest};
use crate::workload::Client;

/// A message of a world whose family speaks protocol `M`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg<M> {
    /// The family's own protocol, between its service nodes and its lock clients.
    Service(M),
    /// A storage operation.
    Storage(StorageRequest),
    /// Storage's answer.
    StorageReply(StorageReply),
    /// A storage operation on row `.0` (the `keys` workload's many rows; `Storage` is row 0).
    /// Boxed, so that the row does not make every message of every world larger.
    StorageRow(Box<(u64, StorageRequest)>),
}

/// A timer of a world whose service nodes set `S` and lock clients `L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer<S, L> {
    /// A service node's timer.
    Service(S),
    /// A lock client's timer.
    Lock(L),
    /// A workload client's timer.
    Work(WorkTimer),
}

/// Timers of a workload client. Those of one critical section carry its grant's sequence
/// number, so a timer left over from an earlier grant is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkTimer {
    /// Thinking is over: request the lock.
    Think,
    /// Claim the resource for `grant` (compare-and-set storage).
    Claim {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Work under `grant` is done.
    WorkDone {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Check the lease of `grant` before writing.
    Check {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Send the write of `grant`.
    Write {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Storage has not answered operation `op`.
    StorageTimeout {
        /// The operation's sequence number.
        op: u32,
    },
    /// A leader under `grant` starts its next task.
    Task {
        /// The grant's sequence number.
        grant: u32,
    },
    /// A leader under `grant` that lost leadership notices the cancelled context and stops
    /// (`on_stopped_leading = "cancel"`).
    StopLeading {
        /// The grant's sequence number.
        grant: u32,
    },
    /// A worker's job is done: its effect happened.
    JobDone {
        /// The job.
        job: u64,
    },
    /// A worker commits its finished job (the lock client's release).
    JobCommit {
        /// The job.
        job: u64,
    },
    /// A scheduled job's timer: the next tick may be due on the client's wall clock.
    Tick,
    /// A scheduled job's holder releases the lock of `grant`, held since the grant for at
    /// least `lock_at_least` (ShedLock's `lockAtLeastFor`).
    Unlock {
        /// The grant's sequence number.
        grant: u32,
    },
    /// A client that starts late (`[workload.per_client]` `start_ms`) starts.
    Start,
}

/// The message type of family `F`'s worlds.
pub type MsgOf<F> = Msg<<F as Family>::Msg>;
/// The timer type of family `F`'s worlds.
pub type TimerOf<F> = Timer<<F as Family>::Timer, <<F as Family>::Lock as LockClient>::Timer>;

/// A node of a world of family `F`.
// A world holds a handful of nodes, each once: variant sizes do not matter, and boxing
// would add a pointer chase to every handler call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node<F: Family> {
    /// One of the family's service nodes (a server, a sentinel, a member).
    Service(F::Node),
    /// The protected storage.
    Storage(Storage),
    /// A workload client with its lock client.
    Client(Client<F::Lock>),
}

type ServiceEnv<'a, E, F> = Scoped<
    'a,
    E,
    ServiceSide<
        <F as Family>::Msg,
        <F as Family>::Timer,
        <<F as Family>::Lock as LockClient>::Timer,
    >,
>;
type LockEnv<'a, E, F> = Scoped<
    'a,
    E,
    LockSide<<F as Family>::Msg, <F as Family>::Timer, <<F as Family>::Lock as LockClient>::Timer>,
>;

impl<F: Family> Process for Node<F> {
    type Msg = MsgOf<F>;
    type Timer = TimerOf<F>;
    type Event = Event;
    type Observation = Observation;

    fn on_start(&mut self, env: &mut impl EnvOf<Self>) {
        match self {
            Node::Service(s) => s.on_start(&mut ServiceEnv::<_, F>::new(env)),
            Node::Client(c) => c.on_first_start(env),
            Node::Storage(_) => {}
        }
    }

    fn on_message(&mut self, env: &mut impl EnvOf<Self>, from: NodeId, msg: MsgOf<F>) {
        match (self, msg) {
            (Node::Service(s), Msg::Service(m)) => {
                s.on_message(&mut ServiceEnv::<_, F>::new(env), from, m);
            }
            (Node::Client(c), Msg::Service(m)) => {
                let signal = c
                    .lock_mut()
                    .on_message(&mut LockEnv::<_, F>::new(env), from, m);
                c.on_signal(env, signal);
            }
            (Node::Client(c), Msg::StorageReply(reply)) => c.on_storage_reply(env, reply),
            (Node::Storage(s), Msg::Storage(req)) => s.on_request(env, from, 0, req),
            (Node::Storage(s), Msg::StorageRow(op)) => s.on_request(env, from, op.0, op.1),
            // Storage requests go only to the storage node, replies only to the client that
            // asked, and the family's protocol only between its own nodes and lock clients:
            // nothing else is ever addressed.
            (_, msg) => unreachable!("{} was sent {msg:?}", env.name()),
        }
    }

    fn on_timer(&mut self, env: &mut impl EnvOf<Self>, _id: TimerId, timer: TimerOf<F>) {
        match (self, timer) {
            (Node::Service(s), Timer::Service(t)) => {
                s.on_timer(&mut ServiceEnv::<_, F>::new(env), t);
            }
            (Node::Client(c), Timer::Lock(t)) => {
                let signal = c.lock_mut().on_timer(&mut LockEnv::<_, F>::new(env), t);
                c.on_signal(env, signal);
            }
            (Node::Client(c), Timer::Work(t)) => c.on_work_timer(env, t),
            // A node gets back only the timers it set.
            (_, timer) => unreachable!("{} got a timer it never set: {timer:?}", env.name()),
        }
    }

    fn on_crash(&mut self) {
        match self {
            Node::Service(s) => s.on_crash(),
            Node::Client(c) => c.on_crash(),
            // Storage is a database whose state is durable.
            Node::Storage(_) => {}
        }
    }

    fn on_restart(&mut self, env: &mut impl EnvOf<Self>) {
        match self {
            Node::Service(s) => s.on_restart(&mut ServiceEnv::<_, F>::new(env)),
            Node::Client(c) => c.on_start(env),
            Node::Storage(_) => {}
        }
    }

    fn on_terminate(&mut self, env: &mut impl EnvOf<Self>) {
        // A server or the storage told to stop is only killed when its grace ends: their
        // shutdowns are not modelled.
        if let Node::Client(c) = self {
            c.on_terminate(env);
        }
    }

    /// Only service nodes grow: the storage holds a row per row the scenario has, and a
    /// client its current acquisition.
    fn held_bytes(&self) -> u64 {
        match self {
            Node::Service(s) => s.held_bytes(),
            Node::Storage(_) | Node::Client(_) => 0,
        }
    }

    fn plays(&self, role: &str) -> bool {
        match self {
            Node::Service(s) => s.plays(role),
            Node::Client(c) => role == crate::family::played::HOLDER && c.holds(),
            Node::Storage(_) => false,
        }
    }

    fn kernel_answer(&self, from: NodeId, msg: &MsgOf<F>) -> Option<MsgOf<F>> {
        match (self, msg) {
            (Node::Service(s), Msg::Service(m)) => s.kernel_answer(from, m).map(Msg::Service),
            (Node::Client(c), Msg::Service(m)) => c.lock().kernel_answer(from, m).map(Msg::Service),
            _ => None,
        }
    }

    fn on_reset(&mut self, env: &mut impl EnvOf<Self>, peer: NodeId) {
        match self {
            Node::Service(s) => s.on_reset(&mut ServiceEnv::<_, F>::new(env), peer),
            Node::Client(c) => {
                let signal = c.lock_mut().on_reset(&mut LockEnv::<_, F>::new(env), peer);
                c.on_signal(env, signal);
            }
            // Storage is durable and answers requests; it holds no state per connection.
            Node::Storage(_) => {}
        }
    }
}
