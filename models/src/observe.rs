//! Observations: what models note for observers beside the history (docs/checker.md judges
//! only the history). The host stamps each with the true time and the node; reports read them
//! (the timeline's server lanes, a run's counters); no model ever reads one back, and they are
//! not part of the trace hash.

use lockstep_sim::{ClockKind, LocalTime, NodeId};

/// The workload counts each acquisition it starts (a `Request`) as this, when the scenario
/// asks for the herd figure (`[workload] acquire`): one try-lock call, one blocking lock call
/// however long it waits.
pub const ACQUISITIONS: &str = "acquisitions";
/// A lock client told to count (`crate::Family::count_requests`) counts each request it sends
/// to take the lock as this: a Redis `SET NX`, a
/// Redlock round, etcd's put and each look for the key to wait on, ZooKeeper's create and each
/// listing of the children, a PostgreSQL lock call. Per acquisition, it measures the
/// thundering herd: the retries of a polling lock, the wake-ups of a queue.
pub const ACQUIRE_REQUESTS: &str = "acquire requests";

/// One observation of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// The node's own view of who holds the lock changed: a Redis server's lock key, an etcd
    /// or ZooKeeper member's key first in line in its applied state.
    Holder(HolderView),
    /// One more of the family's counter of this name ([`crate::family::Counter`]).
    Count(&'static str),
}

/// A service node's view of the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderView {
    /// `client` holds it from now on; until `expires` when the node gives the grant a
    /// deadline: the first reading of that clock at which the grant has lapsed.
    Granted {
        /// The holder.
        client: NodeId,
        /// The deadline, if any.
        expires: Option<(ClockKind, LocalTime)>,
    },
    /// The holder's deadline moved (a renewal).
    Extended {
        /// The new deadline.
        expires: (ClockKind, LocalTime),
    },
    /// Nobody holds it (released, deleted, or nothing in line).
    Free,
}
