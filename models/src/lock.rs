//! The lock-client interface a workload client drives, whatever the family.
//!
//! A family's lock client is a state machine that takes commands from the workload (acquire,
//! release, is my lease still valid?) and answers with [`LockSignal`]s as replies and timers
//! arrive. It speaks its family's protocol (`Msg`) and sets its own timers (`Timer`), through
//! an environment in those types ([`crate::env::Host`]).

use std::fmt::Debug;
use std::hash::Hash;

use lockstep_sim::NodeId;

use crate::env::Host;
use crate::storage::{StorageReply, StorageRequest};

/// What a lock client tells its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockSignal {
    /// The client now holds the lock, with this fencing token if the family gives one.
    Granted {
        /// The fencing token.
        token: Option<u64>,
        /// The service's name for the acquisition, as its `Issued` record gave it (see
        /// `lockstep_check::Event::Issued`); `None` where the service records none.
        ticket: Option<u64>,
    },
    /// The client gave up acquiring.
    AcquireFailed,
    /// The client learned it no longer holds the lock (a renewal was refused).
    Lost,
    /// The release finished (or there was nothing to release).
    Released,
    /// The service answered an operation on a resource it keeps itself
    /// ([`LockClient::resource_op`]), with storage's own reply.
    Resource(StorageReply),
    /// A job queue's client took job `job` (its acquire is a dequeue; its release commits
    /// the job done). Only under the `queue` workload.
    Job(u64),
}

/// How a lock client takes its lock: the one exclusive lock, or one side of a read-write lock
/// (the `read-write` workload, for a family that says it takes them:
/// `crate::Family::read_write`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Access {
    /// The plain lock: one holder at a time.
    #[default]
    Exclusive,
    /// A read-write lock's read side: shared with other readers, never with a writer.
    Read,
    /// A read-write lock's write side: one writer, and no reader.
    Write,
}

/// No resource: the `Resource` of a lock client whose service keeps none. It has no values,
/// so a workload of such a client can only address a storage node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoResource {}

/// A family's lock client.
pub trait LockClient: Clone + Debug + Eq {
    /// The family's messages, to and from its service.
    type Msg: Clone + Debug + Hash + Eq;
    /// The client's timers.
    type Timer: Copy + Debug + Hash + Eq;
    /// How the protected resource is kept when the lock service keeps it itself (the guard of
    /// its writes, say); [`NoResource`] when the service keeps none.
    type Resource: Copy + Debug + Eq + Send + Sync;

    /// Names the lock the next acquisitions take, with the `keys` workload's many locks: lock
    /// 0 is the family's one lock, as without the workload; lock `n` another lock of the same
    /// service. Called only while the client holds nothing, and only with lock 0 unless its
    /// family says it takes many locks (`crate::Family::many_locks`).
    fn select(&mut self, lock: u32);
    /// Says which side of a read-write lock the next acquisitions take. Called only while the
    /// client holds nothing, before each acquisition of the `read-write` workload, and only
    /// for a family that says it takes read-write locks (`crate::Family::read_write`); the
    /// others never see anything but [`Access::Exclusive`], which the default ignores.
    fn access(&mut self, access: Access) {
        debug_assert_eq!(
            access,
            Access::Exclusive,
            "a family without read-write locks"
        );
    }
    /// Starts acquiring; a signal when the outcome is known at once.
    fn acquire(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>) -> Option<LockSignal>;
    /// Takes the lock it holds once more, as a nested call that locks the same lock does in
    /// the family's library (`[workload] reenter`): counted (granted at once, released by the
    /// matching [`LockClient::leave`]), re-entered without a count, refused, or acquired anew
    /// and waited for like any other acquisition. Answers `Granted` (the token is ignored) or
    /// `AcquireFailed`, a signal when known at once; after `AcquireFailed` the client holds
    /// the lock as before the call, as far as it knows. Called only while it holds the lock,
    /// and only for a family that says it re-enters (`crate::Family::reentry`).
    fn reenter(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>) -> Option<LockSignal> {
        let _ = env;
        unreachable!("a family without nested acquisitions")
    }
    /// Leaves the nested hold [`LockClient::reenter`] took, as the nested call's unlock does:
    /// `Released` when done. What the client then believes of the outer hold is its
    /// library's: still held (a count, or a lock object that knows nothing of the nested
    /// unlock, whatever it did on the service), or nothing (redis-py's lock object, whose
    /// token the nested acquire replaced).
    fn leave(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>) -> Option<LockSignal> {
        let _ = env;
        unreachable!("a family without nested acquisitions")
    }
    /// Starts releasing; [`LockSignal::Released`] when done at once.
    fn release(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>) -> Option<LockSignal>;
    /// Whether the client believes it still holds the lock, by its own clocks.
    fn valid(&self, env: &impl Host<Self::Msg, Self::Timer>) -> bool;
    /// The process crashed: forget everything volatile.
    fn reset(&mut self);
    /// A message from the service.
    fn on_message(
        &mut self,
        env: &mut impl Host<Self::Msg, Self::Timer>,
        from: NodeId,
        msg: Self::Msg,
    ) -> Option<LockSignal>;
    /// What this host's kernel answers to `msg` from `from` on the node's behalf (a TCP
    /// keepalive probe), from what the kernel knows alone (`lockstep_sim::Process::kernel_answer`):
    /// the node never sees `msg`, even when paused. By default, nothing.
    fn kernel_answer(&self, from: NodeId, msg: &Self::Msg) -> Option<Self::Msg> {
        let _ = (from, msg);
        None
    }
    /// The connection to `peer` was reset (`lockstep_sim::Process::on_reset`): it crashed,
    /// or refused a request, which will not be answered. By default nothing happens: the
    /// client waits for its own timeouts.
    fn on_reset(
        &mut self,
        env: &mut impl Host<Self::Msg, Self::Timer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        let _ = (env, peer);
        None
    }
    /// A timer of the client fired.
    fn on_timer(
        &mut self,
        env: &mut impl Host<Self::Msg, Self::Timer>,
        timer: Self::Timer,
    ) -> Option<LockSignal>;
    /// Sends a storage operation to the resource the service keeps, kept as `resource`; the
    /// answer comes back as [`LockSignal::Resource`].
    fn resource_op(
        &mut self,
        env: &mut impl Host<Self::Msg, Self::Timer>,
        resource: &Self::Resource,
        op: StorageRequest,
    );
}
