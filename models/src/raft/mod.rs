//! Raft, sans-IO: leader election, log replication and commit, PreVote, CheckQuorum, and
//! linearizable reads by ReadIndex or by leader lease. Written from the Raft paper (Ongaro and
//! Ousterhout, "In Search of an Understandable Consensus Algorithm", USENIX ATC 2014, cited as
//! *paper §n*) and Ongaro's thesis ("Consensus: Bridging Theory and Practice", 2014, cited as
//! *thesis §n*), following the choices of etcd's raft library (`go.etcd.io/raft/v3`, cited by
//! function name in `raft.go`, `log.go`, `tracker/progress.go`, `read_only.go`), because the
//! etcd model is built on top of it.
//!
//! No crate's Raft is used: they draw their randomness outside the run's seed. Here every
//! random choice (the randomized election timeout) comes from the
//! [`Rng`](lockstep_sim::Rng) the host passes in, which is the node's own stream, and nothing
//! iterates a hash map.
//!
//! [`Raft`] is a plain state machine. The host drives it with [`Raft::tick`] (every 100 ms of
//! the node's MONO clock in etcd), [`Raft::step`] (a message arrived), [`Raft::propose`] and
//! [`Raft::read_index`]; each call appends its effects to an [`Outbox`]: messages to send,
//! newly committed entries to apply, reads that became safe to serve, changes of role or
//! term, and the entries written to the log. The durable state ([`Durable`]: term, vote,
//! log) is updated in place before any message that depends on it is handed out, as etcd's
//! `Ready` contract requires (persist, then send); a crash keeps [`Raft::durable`] and the
//! host rebuilds the node with [`Raft::new`].
//!
//! Not modelled: snapshots and log compaction, membership changes, learners, leadership
//! transfer, flow control beyond a cap on entries per message (no in-flight limit), and
//! asynchronous storage writes.
//!
//! Start reading at [`Raft::tick`] and [`Raft::step`]; [`safety`] holds the checker of Raft's
//! safety properties (paper §5.4, Figure 3) over what a host records.

mod core;
mod progress;
pub mod safety;
#[cfg(test)]
mod tests;

use std::fmt::Debug;
use std::sync::Arc;

use lockstep_sim::NodeId;

pub use self::core::Raft;

/// How a leader serves [`Raft::read_index`] (etcd `ReadOnlyOption`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadOnlyOption {
    /// ReadIndex (thesis §6.4, etcd `ReadOnlySafe`): the leader records its commit index,
    /// then confirms it is still the leader by a round of heartbeats that a quorum
    /// acknowledges. Safe whatever the clocks do.
    #[default]
    Safe,
    /// Leader lease (thesis §6.4.1, etcd `ReadOnlyLeaseBased`): the leader answers at once,
    /// trusting CheckQuorum to have stepped it down if it lost its quorum. Safe only while
    /// clocks run at bounded rates; requires `check_quorum`.
    LeaseBased,
}

/// A node's Raft settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RaftConfig {
    /// Every voting member, including this node, in id order.
    pub peers: Vec<NodeId>,
    /// This node.
    pub me: NodeId,
    /// The election timeout in ticks (etcd `ElectionTick`; the etcd server's default is 10:
    /// `ElectionMs` 1000 / `TickMs` 100). A follower's randomized timeout is drawn from
    /// `[election_ticks, 2 * election_ticks)`.
    pub election_ticks: u32,
    /// Ticks between a leader's heartbeats (etcd `HeartbeatTick`, default 1).
    pub heartbeat_ticks: u32,
    /// PreVote (thesis §9.6), as the etcd server enables it.
    pub pre_vote: bool,
    /// CheckQuorum (thesis §6.2 and §4.2.3), as the etcd server enables it: a leader steps
    /// down when it has not heard from a quorum within an election timeout, and a node that
    /// heard from a leader within the election timeout ignores vote requests.
    pub check_quorum: bool,
    /// How reads are served.
    pub read_only: ReadOnlyOption,
    /// The most entries one append carries (etcd bounds appends by `MaxSizePerMsg`, in
    /// bytes; the etcd server allows 1.5 MiB). Small values make followers acknowledge
    /// part of a leader's tail, which tests use to reach paper Figure 8.
    pub max_append_entries: u64,
}

impl RaftConfig {
    /// The etcd server's settings (`etcdserver/bootstrap.go` `raftConfig`): 10 election
    /// ticks, 1 heartbeat tick, PreVote and CheckQuorum on, ReadIndex reads, up to 64
    /// entries per append.
    pub fn with_defaults(peers: Vec<NodeId>, me: NodeId) -> RaftConfig {
        RaftConfig {
            peers,
            me,
            election_ticks: 10,
            heartbeat_ticks: 1,
            pre_vote: true,
            check_quorum: true,
            read_only: ReadOnlyOption::Safe,
            max_append_entries: 64,
        }
    }

    /// Panics on a setting etcd's `Config.validate` rejects, or on peers out of order.
    pub fn validate(&self) {
        assert!(
            self.peers.windows(2).all(|w| w[0] < w[1]),
            "peers must be in id order without duplicates: {:?}",
            self.peers
        );
        assert!(
            self.peers.contains(&self.me),
            "{:?} is not among the peers {:?}",
            self.me,
            self.peers
        );
        assert!(
            self.heartbeat_ticks > 0,
            "heartbeat tick must be greater than 0"
        );
        assert!(
            self.max_append_entries > 0,
            "an append must be able to carry an entry"
        );
        assert!(
            self.election_ticks > self.heartbeat_ticks,
            "election tick must be greater than heartbeat tick"
        );
        assert!(
            self.read_only == ReadOnlyOption::Safe || self.check_quorum,
            "CheckQuorum must be enabled when ReadOnlyOption is LeaseBased"
        );
    }

    /// Votes (or acknowledgements) that make a majority of the peers.
    pub fn quorum(&self) -> usize {
        self.peers.len() / 2 + 1
    }
}

/// A node's role (etcd `StateType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Follows a leader, or waits for one.
    Follower,
    /// Asks for pre-votes at the next term without having bumped its own (thesis §9.6).
    PreCandidate,
    /// Asks for votes at its term.
    Candidate,
    /// Leads its term.
    Leader,
}

/// What an entry carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EntryData<C> {
    /// The no-op a leader appends at the start of its term (paper §8, thesis §6.4), which
    /// lets it commit entries of earlier terms and serve reads.
    Empty,
    /// A command for the state machine. An entry never changes once appended, so the log,
    /// the appends that carry it and [`Outbox::committed`] share one copy of the command
    /// rather than cloning it at every hop. (`Arc` hashes, compares and prints as the command
    /// itself, so traces do not see the sharing.)
    Command(Arc<C>),
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry<C> {
    /// The term of the leader that created it.
    pub term: u64,
    /// Its position in the log, from 1.
    pub index: u64,
    /// What it carries.
    pub data: EntryData<C>,
}

/// What survives a crash (paper Figure 2, "persistent state on all servers"; etcd
/// `HardState` and the log in `Storage`). The commit index is volatile here: a restarted
/// node learns it again from the leader.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Durable<C> {
    /// The latest term this node has seen.
    pub term: u64,
    /// Whom it voted for in `term`.
    pub voted_for: Option<NodeId>,
    /// The log; `log[i]` has index `i + 1`.
    pub log: Vec<Entry<C>>,
}

impl<C> Default for Durable<C> {
    fn default() -> Durable<C> {
        Durable {
            term: 0,
            voted_for: None,
            log: Vec::new(),
        }
    }
}

impl<C> Durable<C> {
    /// A node that has never run: term 0, no vote, an empty log.
    pub fn new() -> Durable<C> {
        Durable::default()
    }

    /// The index of the last entry, 0 for an empty log.
    pub fn last_index(&self) -> u64 {
        self.log.len() as u64
    }

    /// The term of the last entry, 0 for an empty log.
    pub fn last_term(&self) -> u64 {
        self.log.last().map_or(0, |e| e.term)
    }

    /// The term of the entry at `index` (0 at index 0), `None` past the end.
    pub fn term_at(&self, index: u64) -> Option<u64> {
        if index == 0 {
            return Some(0);
        }
        self.log.get(index as usize - 1).map(|e| e.term)
    }

    /// The entry at `index`, from 1.
    pub fn entry(&self, index: u64) -> Option<&Entry<C>> {
        index.checked_sub(1).and_then(|i| self.log.get(i as usize))
    }

    /// Panics if the log is not numbered from 1 or its terms decrease or pass `term`.
    pub fn validate(&self) {
        let mut prev_term = 0;
        for (i, e) in self.log.iter().enumerate() {
            assert_eq!(e.index, i as u64 + 1, "log entries must be numbered from 1");
            assert!(e.term >= prev_term, "log terms must not decrease");
            prev_term = e.term;
        }
        assert!(
            prev_term <= self.term,
            "log term {prev_term} past term {}",
            self.term
        );
    }
}

/// The messages of Raft (paper Figure 2; etcd `raftpb.MessageType`). Every message carries
/// the sender's term except where noted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RaftMsg<C> {
    /// A pre-candidate asks whether it could win at `term`, its own term + 1, without
    /// having bumped its term (etcd `MsgPreVote`).
    PreVote {
        /// The term it would campaign at.
        term: u64,
        /// Its last log index.
        last_index: u64,
        /// Its last log term.
        last_term: u64,
    },
    /// The answer to a [`RaftMsg::PreVote`] (etcd `MsgPreVoteResp`): a grant echoes the
    /// asked term, a rejection carries the voter's term.
    PreVoteResp {
        /// The asked term when granted, the voter's term when rejected.
        term: u64,
        /// True when not granted.
        reject: bool,
    },
    /// RequestVote (paper §5.2; etcd `MsgVote`).
    Vote {
        /// The candidate's term.
        term: u64,
        /// Its last log index.
        last_index: u64,
        /// Its last log term.
        last_term: u64,
    },
    /// The answer to a [`RaftMsg::Vote`] (etcd `MsgVoteResp`).
    VoteResp {
        /// The candidate's term when granted, the voter's term when rejected.
        term: u64,
        /// True when not granted.
        reject: bool,
    },
    /// AppendEntries (paper §5.3; etcd `MsgApp`).
    Append {
        /// The leader's term.
        term: u64,
        /// The index of the entry just before `entries`.
        prev_index: u64,
        /// Its term.
        prev_term: u64,
        /// Entries to append, consecutive from `prev_index + 1` (may be empty).
        entries: Vec<Entry<C>>,
        /// The leader's commit index.
        commit: u64,
    },
    /// The answer to an [`RaftMsg::Append`] (etcd `MsgAppResp`).
    AppendResp {
        /// The follower's term.
        term: u64,
        /// Accepted: the follower's log matches the leader's up to here. Rejected: the
        /// `prev_index` that did not match.
        index: u64,
        /// True when the consistency check failed.
        reject: bool,
        /// On rejection, the follower's guess of the last index where the logs may match
        /// (etcd `RejectHint`, from `findConflictByTerm`).
        hint_index: u64,
        /// The follower's term at `hint_index` (etcd `LogTerm`).
        hint_term: u64,
    },
    /// A leader's heartbeat (etcd `MsgHeartbeat`): carries the commit index the follower may
    /// safely use and, while reads wait, the read-index context to acknowledge.
    Heartbeat {
        /// The leader's term.
        term: u64,
        /// `min(commit, the follower's match index)`.
        commit: u64,
        /// The newest pending read's context.
        ctx: Option<u64>,
    },
    /// The answer to a [`RaftMsg::Heartbeat`] (etcd `MsgHeartbeatResp`).
    HeartbeatResp {
        /// The follower's term.
        term: u64,
        /// The context of the heartbeat it answers.
        ctx: Option<u64>,
    },
}

impl<C> RaftMsg<C> {
    /// The term the message carries.
    pub fn term(&self) -> u64 {
        match *self {
            RaftMsg::PreVote { term, .. }
            | RaftMsg::PreVoteResp { term, .. }
            | RaftMsg::Vote { term, .. }
            | RaftMsg::VoteResp { term, .. }
            | RaftMsg::Append { term, .. }
            | RaftMsg::AppendResp { term, .. }
            | RaftMsg::Heartbeat { term, .. }
            | RaftMsg::HeartbeatResp { term, .. } => term,
        }
    }
}

/// A proposal or read sent to a node that does not lead; `leader` is whom it follows, if
/// anyone (a hint for the client's retry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NotLeader {
    /// The leader this node knows of.
    pub leader: Option<NodeId>,
}

/// The effects of one call, appended in the order they happened. The host may keep one
/// outbox and drain it after every call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outbox<C> {
    /// Messages to send, in order.
    pub msgs: Vec<(NodeId, RaftMsg<C>)>,
    /// Newly committed entries, in index order, each exactly once per incarnation: a
    /// restarted node's commit index starts at 0, so it hands out its log again from index 1
    /// as it learns the commit index, and the host rebuilds its state machine by replaying.
    pub committed: Vec<Entry<C>>,
    /// Reads that are safe to serve, as `(ctx, read index)`: serve each once the state
    /// machine has applied the read index.
    pub reads: Vec<(u64, u64)>,
    /// Every change of `(role, term)`, in order. `Leader` is reported when the node becomes
    /// leader, before its empty entry commits; a leader is ready (etcd's `Promote` point) once
    /// [`Raft::committed_entry_in_current_term`] holds, i.e. when its own
    /// [`EntryData::Empty`] shows up in `committed`.
    pub role_changes: Vec<(Role, u64)>,
    /// Entries written to the log, in order (etcd `Ready.Entries`): a leader's new entries,
    /// or what a follower appended, starting at the first index it overwrote. [`Durable`] is
    /// already updated; hosts use this for recording and checking, not for persistence.
    pub appended: Vec<Entry<C>>,
}

impl<C> Default for Outbox<C> {
    fn default() -> Outbox<C> {
        Outbox {
            msgs: Vec::new(),
            committed: Vec::new(),
            reads: Vec::new(),
            role_changes: Vec::new(),
            appended: Vec::new(),
        }
    }
}

impl<C> Outbox<C> {
    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
            && self.committed.is_empty()
            && self.reads.is_empty()
            && self.role_changes.is_empty()
            && self.appended.is_empty()
    }

    /// Empties every field.
    pub fn clear(&mut self) {
        self.msgs.clear();
        self.committed.clear();
        self.reads.clear();
        self.role_changes.clear();
        self.appended.clear();
    }
}
