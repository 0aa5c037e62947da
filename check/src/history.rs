//! The history: what models record, stamped with true time, and nothing else.
//!
//! The history is the interface between the models (which record it through the simulator's
//! context) and the checker (which judges it). It is plain data with no dependency on the
//! simulator, so histories recorded from real systems can be judged by the same checker. Times
//! are true time in integer nanoseconds since the start of the run.
//!
//! The exact meaning of every event is in `docs/checker.md` ("Terms" and the checks), its
//! written form in `docs/history.md`.

use serde::{Deserialize, Serialize};

/// A process of the run, by index. Clients, servers and storage share one index space, so a
/// fault on node `n` and the client `n` are the same process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

/// One grant: the `seq`-th time (from 1) that `client` decided it holds the lock.
///
/// The global grant order is not known to clients; the checker derives it from the true time
/// at which the service issued each grant ([`Event::Issued`], named by the grant's ticket), or
/// of its [`Event::Grant`] when the grant names no ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GrantId {
    /// The client that holds the grant.
    pub client: NodeId,
    /// Per-client sequence number, from 1.
    pub seq: u32,
}

/// One storage operation: the `seq`-th operation (from 1) that `client` sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId {
    /// The client that sent the operation.
    pub client: NodeId,
    /// Per-client sequence number, from 1.
    pub seq: u32,
}

/// Why a client stopped acting for a grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitReason {
    /// The client finished its work and released the lock.
    Released,
    /// The client judged the lease lost: a failed renewal, a validity check that failed on its
    /// own clock, or a session event.
    Lost,
    /// The client abandoned the critical section: a storage operation timed out or was
    /// rejected.
    Abandoned,
    /// The client crashed. The checker also ends a grant at a crash fault of its client.
    Crashed,
    /// The client was told to stop (SIGTERM) and left the critical section to release the
    /// lock before it exits.
    Terminated,
}

/// The kind of a storage operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum OpKind {
    /// A read; `value` is what the storage returned (meaningful only when accepted).
    Read {
        /// The value read.
        value: u64,
    },
    /// A write of `value`, computed by the client from `base`, the value its grant read.
    Write {
        /// The value written.
        value: u64,
        /// The value the grant read before computing `value`.
        base: u64,
    },
    /// The client installs its token as the resource's owner, so that its later write can be
    /// a compare-and-set on it (antirez's alternative to fencing, K7 in docs/catalogue.md).
    Claim,
}

/// What storage did with an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpOutcome {
    /// The operation took effect.
    Accepted,
    /// Fencing refused the operation.
    Rejected,
}

/// A storage operation as the storage handled it (so duplicated or delayed messages are seen
/// as they really landed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StorageOp {
    /// The operation.
    pub op: OpId,
    /// The grant under which the client sent it.
    pub grant: GrantId,
    /// Read or write.
    pub kind: OpKind,
    /// The fencing token sent with the operation, if any.
    pub token: Option<u64>,
    /// Accepted or rejected.
    pub outcome: OpOutcome,
}

/// The kind of a fault, for reports and liveness (never for safety).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A process stopped running (GC, SIGSTOP, VM freeze).
    Pause,
    /// A paused process runs again.
    Resume,
    /// A process crashed, losing its volatile state.
    Crash,
    /// A crashed process started again.
    Restart,
    /// Links between processes were blocked.
    Partition,
    /// Blocked links were opened again.
    Heal,
    /// A wall clock stepped.
    ClockStep,
    /// A wall clock started slewing.
    ClockSlew,
    /// A clock's rate changed.
    ClockDrift,
    /// A network link's behaviour changed (extra delay, loss).
    Network,
    /// A process was told to stop (SIGTERM); it is killed (a `crash`) when its grace ends.
    Terminate,
}

/// A fault, as the world applied it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fault {
    /// What happened.
    pub kind: FaultKind,
    /// The processes it affected.
    pub nodes: Vec<NodeId>,
    /// A short human-readable description, such as `pause client-1 for 15s`.
    pub detail: String,
}

/// One history event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "event")]
pub enum Event {
    /// A client starts trying to acquire the lock.
    Request {
        /// The client.
        client: NodeId,
    },
    /// A client decided it holds the lock (after a reply, a quorum, a session...).
    Grant {
        /// The grant; `grant.client` is the holder.
        grant: GrantId,
        /// The fencing token of the grant, if the family has one.
        token: Option<u64>,
        /// The service's name for this acquisition, as an earlier [`Event::Issued`] of the
        /// same client gave it: the grant then takes its place in grant order at the instant
        /// the service issued it, not when the client learned of it. `None` for a family
        /// whose acquisition has no single service instant (Redlock counts its own quorum).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<u64>,
    },
    /// A client gave up trying to acquire; its wait that began at the last `Request` ends.
    AcquireFailed {
        /// The client.
        client: NodeId,
    },
    /// A client stops acting for a grant.
    Exit {
        /// The grant that ends.
        grant: GrantId,
        /// Why.
        why: ExitReason,
    },
    /// Storage handled an operation.
    Storage(StorageOp),
    /// The world applied a fault.
    Fault(Fault),
    /// The lock service made `client` the lock's owner: the instant an acquisition took effect
    /// in the service (a Redis primary's `SET NX`, the etcd or ZooKeeper apply that left the
    /// client's key first in line), recorded by the service. `ticket` names the acquisition
    /// (Redis's lock value, etcd's create revision, ZooKeeper's czxid); the client's
    /// [`Event::Grant`] names it again. Only the first `Issued` of a ticket counts: replicas
    /// that apply the same change later record it again.
    Issued {
        /// The client the service made the owner.
        client: NodeId,
        /// The acquisition.
        ticket: u64,
    },
    /// A job queue took job `job`: the producer's insert committed. Jobs are numbered from 1
    /// in the order they were enqueued.
    Enqueued {
        /// The job.
        job: u64,
    },
    /// `client` took job `job` from the queue and starts its work.
    Dequeued {
        /// The job.
        job: u64,
        /// The worker.
        client: NodeId,
    },
    /// `client` finished job `job`'s work: its effect happened, whether or not the queue then
    /// recorded the job as done.
    Done {
        /// The job.
        job: u64,
        /// The worker.
        client: NodeId,
    },
    /// A scheduled job's tick `tick` came due on `client`'s schedule (its wall clock). The
    /// client's next `Request` and its grant, if any, are for this tick: a grant with an
    /// accepted write ran the tick's job.
    Due {
        /// The tick (its instant on the schedule's clock divided by the period).
        tick: u64,
        /// The client.
        client: NodeId,
    },
    /// `client` picked resource `resource`, covered by lock `lock`: its next `Request`, the
    /// grant that answers it and that grant's storage ops are for that lock and that resource.
    /// Critical sections conflict only with those of the same lock, and storage ops only with
    /// those on the same resource. A grant whose client picked nothing is for lock 0 and
    /// resource 0, the one lock and the one resource of a history without `Pick` events.
    Pick {
        /// The client.
        client: NodeId,
        /// The lock that covers the resource.
        lock: u64,
        /// The resource the critical section works on.
        resource: u64,
    },
    /// `client`'s next `Request`, and the grant that answers it, are for the lock in shared
    /// (read) mode: a reader's grant, which shares the lock with other readers. A grant whose
    /// request had no `Shared` before it is exclusive (a writer's, or a plain lock's).
    Shared {
        /// The client.
        client: NodeId,
    },
    /// `client`, inside a critical section, takes the lock it holds once more: a nested call
    /// that locks the same lock (`[workload] reenter`). Its critical section goes on; the
    /// nested wait ends at its `Nested`, or unanswered at the grant's `Exit`, the client's
    /// crash or the run's end. Whether the lock is re-entrant decides what follows: granted at
    /// once by a count, granted after the lock expired under it, or refused.
    Nest {
        /// The client.
        client: NodeId,
    },
    /// `client`'s nested acquisition (its last `Nest`) holds the lock again.
    Nested {
        /// The client.
        client: NodeId,
    },
}

/// One history entry: an event at a true time.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// True time of the event, in nanoseconds since the start of the run.
    pub time_ns: u64,
    /// The event.
    pub event: Event,
}

/// A whole history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Entries in true-time order; entries at the same time are in the order they happened.
    pub entries: Vec<Entry>,
    /// Process names, indexed by [`NodeId`].
    pub names: Vec<String>,
    /// True time at which the run ended; intervals still open end here.
    pub end_ns: u64,
    /// False when the run hit its event bound before its planned end: the verdict is then at
    /// best `unknown`.
    pub complete: bool,
}

impl History {
    /// The name of a process, or `node-N` when the history does not name it.
    pub fn name(&self, node: NodeId) -> String {
        match self.names.get(node.0 as usize) {
            Some(name) => name.clone(),
            None => format!("node-{}", node.0),
        }
    }

    /// Appends an event at `time_ns`.
    ///
    /// # Panics
    /// If `time_ns` is before the last entry's time: histories are recorded in time order.
    pub fn push(&mut self, time_ns: u64, event: Event) {
        if let Some(last) = self.entries.last() {
            assert!(
                last.time_ns <= time_ns,
                "history entries must be appended in time order ({} after {})",
                time_ns,
                last.time_ns
            );
        }
        self.entries.push(Entry { time_ns, event });
    }
}
