//! What a leader tracks per follower (etcd `tracker/progress.go`) and its queue of reads
//! awaiting a quorum's acknowledgement (etcd `read_only.go`).

use std::collections::VecDeque;

use lockstep_sim::NodeId;

/// How a leader replicates to one follower (etcd `StateType` of `tracker`; snapshots are not
/// modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum ProgressState {
    /// The leader does not know where the follower's log matches: it sends one append at a
    /// time and waits for the answer (or the next heartbeat response).
    Probe,
    /// The follower's log is known to match up to `matched`: the leader streams entries,
    /// advancing `next` as it sends.
    Replicate,
}

/// One follower's replication state on the leader (etcd `Progress`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Progress {
    /// The highest index known to match the leader's log (paper Figure 2 `matchIndex`).
    pub(super) matched: u64,
    /// The next index to send (paper Figure 2 `nextIndex`).
    pub(super) next: u64,
    pub(super) state: ProgressState,
    /// A probe is in flight (etcd `MsgAppFlowPaused`).
    pub(super) paused: bool,
    /// Heard from since the last CheckQuorum (etcd `RecentActive`).
    pub(super) recent_active: bool,
}

impl Progress {
    /// A fresh progress after an election: probing from the leader's last index + 1.
    pub(super) fn new(next: u64) -> Progress {
        Progress {
            matched: 0,
            next,
            state: ProgressState::Probe,
            paused: false,
            recent_active: false,
        }
    }

    /// etcd `BecomeProbe` (from replicate: restart at the match).
    pub(super) fn become_probe(&mut self) {
        self.state = ProgressState::Probe;
        self.paused = false;
        self.next = self.matched + 1;
    }

    /// etcd `BecomeReplicate`.
    pub(super) fn become_replicate(&mut self) {
        self.state = ProgressState::Replicate;
        self.paused = false;
        self.next = self.matched + 1;
    }

    /// etcd `MaybeUpdate`: an acknowledgement up to `n`; false if it is stale.
    pub(super) fn maybe_update(&mut self, n: u64) -> bool {
        if n <= self.matched {
            return false;
        }
        self.matched = n;
        self.next = self.next.max(n + 1);
        self.paused = false;
        true
    }

    /// etcd `MaybeDecrTo`: the follower rejected the append whose previous index was
    /// `rejected`; `match_hint` is where the logs may match. False if the rejection is stale.
    pub(super) fn maybe_decr_to(&mut self, rejected: u64, match_hint: u64) -> bool {
        if self.state == ProgressState::Replicate {
            if rejected <= self.matched {
                return false;
            }
            self.next = self.matched + 1;
            return true;
        }
        if self.next - 1 != rejected {
            return false;
        }
        self.next = rejected.min(match_hint + 1).max(self.matched + 1);
        self.paused = false;
        true
    }

    /// etcd `IsPaused` (in-flight limits are not modelled: replicate never pauses).
    pub(super) fn is_paused(&self) -> bool {
        self.state == ProgressState::Probe && self.paused
    }

    /// etcd `SentEntries`: an append with `entries` entries went out.
    pub(super) fn sent_entries(&mut self, entries: u64) {
        match self.state {
            ProgressState::Replicate => self.next += entries,
            ProgressState::Probe => {
                if entries > 0 {
                    self.paused = true;
                }
            }
        }
    }
}

/// A read waiting for its heartbeat round (etcd `readIndexStatus`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct ReadRequest {
    pub(super) ctx: u64,
    /// The leader's commit index when the read arrived.
    pub(super) index: u64,
    /// Who acknowledged a heartbeat carrying `ctx`, the leader included; sorted.
    acks: Vec<NodeId>,
}

/// Reads awaiting a quorum's acknowledgement, oldest first (etcd `readOnly`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct ReadQueue {
    queue: VecDeque<ReadRequest>,
}

impl ReadQueue {
    /// etcd `addRequest`: a context already waiting is not added twice.
    pub(super) fn add(&mut self, index: u64, ctx: u64) {
        if self.queue.iter().any(|r| r.ctx == ctx) {
            return;
        }
        self.queue.push_back(ReadRequest {
            ctx,
            index,
            acks: Vec::new(),
        });
    }

    /// etcd `recvAck`: `from` acknowledged `ctx`; the number of acknowledgements so far, or
    /// `None` for an unknown context.
    pub(super) fn ack(&mut self, from: NodeId, ctx: u64) -> Option<usize> {
        let r = self.queue.iter_mut().find(|r| r.ctx == ctx)?;
        if let Err(pos) = r.acks.binary_search(&from) {
            r.acks.insert(pos, from);
        }
        Some(r.acks.len())
    }

    /// etcd `advance`: `ctx` reached a quorum, and so did every read queued before it (the
    /// heartbeat round confirmed leadership after they arrived). Returns them, oldest first.
    pub(super) fn advance(&mut self, ctx: u64) -> Vec<ReadRequest> {
        match self.queue.iter().position(|r| r.ctx == ctx) {
            Some(pos) => self.queue.drain(..=pos).collect(),
            None => Vec::new(),
        }
    }

    /// etcd `lastPendingRequestCtx`: what periodic heartbeats carry.
    pub(super) fn last_ctx(&self) -> Option<u64> {
        self.queue.back().map(|r| r.ctx)
    }
}
