//! The Raft state machine (etcd `raft.go`): roles, elections, replication, commit and reads.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use lockstep_sim::{NodeId, Rng};

use super::progress::{Progress, ProgressState, ReadQueue};
use super::{
    Durable, Entry, EntryData, NotLeader, Outbox, RaftConfig, RaftMsg, ReadOnlyOption, Role,
};

/// Which election a node runs (etcd `CampaignType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Campaign {
    /// Ask for pre-votes first (thesis §9.6).
    Pre,
    /// The real election (paper §5.2).
    Election,
}

/// The outcome of counting votes (etcd `quorum.VoteResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tally {
    Pending,
    Won,
    Lost,
}

/// One Raft node. See the [module documentation](super) for how a host drives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raft<C> {
    config: RaftConfig,
    /// Position of `config.me` in `config.peers`.
    me: usize,
    durable: Durable<C>,
    role: Role,
    /// The leader of the current term, if known (etcd `lead`).
    lead: Option<NodeId>,
    /// The highest index known committed (volatile, paper Figure 2 `commitIndex`).
    commit: u64,
    /// Entries up to this index were handed out in [`Outbox::committed`].
    emitted: u64,
    /// Ticks since the last reset (a follower's: since it last heard from a leader or granted
    /// a vote; a leader's: since its last CheckQuorum).
    election_elapsed: u32,
    heartbeat_elapsed: u32,
    /// Drawn from `[election_ticks, 2 * election_ticks)` at every reset.
    randomized_election_timeout: u32,
    /// Votes of the running campaign, by peer position: `Some(granted)`.
    votes: Vec<Option<bool>>,
    /// The leader's view of each peer, by position (its own entry tracks its last index).
    progress: Vec<Progress>,
    /// ReadIndex reads waiting for a heartbeat round.
    read_queue: ReadQueue,
    /// Reads that arrived before this leader committed an entry of its term.
    pending_reads: Vec<u64>,
    /// The `(role, term)` last reported in [`Outbox::role_changes`].
    reported: (Role, u64),
}

impl<C: Clone + Debug + Hash + Eq> Raft<C> {
    /// A follower with the given durable state, knowing no leader and nothing committed: a
    /// new node (with [`Durable::new`]) or a restarted one (with what it kept). Draws its
    /// randomized election timeout from `rng` (etcd `newRaft`, then `becomeFollower`).
    pub fn new(config: RaftConfig, durable: Durable<C>, rng: &mut Rng) -> Raft<C> {
        let mut raft = Raft::dormant(config, durable);
        raft.reset_randomized_election_timeout(rng);
        raft
    }

    /// The same node before it runs: it has drawn no election timeout, and the host must
    /// replace it with [`Raft::new`] (with the node's own stream) before any tick or message.
    /// Hosts built before the run starts hold one of these, so that nothing draws from a
    /// stream outside the run's seed.
    pub fn dormant(config: RaftConfig, durable: Durable<C>) -> Raft<C> {
        config.validate();
        durable.validate();
        if let Some(v) = durable.voted_for {
            assert!(config.peers.contains(&v), "voted for a stranger {v:?}");
        }
        let me = config.peers.binary_search(&config.me).expect("me in peers");
        let n = config.peers.len();
        let next = durable.last_index() + 1;
        let term = durable.term;
        Raft {
            config,
            me,
            durable,
            role: Role::Follower,
            lead: None,
            commit: 0,
            emitted: 0,
            election_elapsed: 0,
            heartbeat_elapsed: 0,
            randomized_election_timeout: 0,
            votes: vec![None; n],
            progress: vec![Progress::new(next); n],
            read_queue: ReadQueue::default(),
            pending_reads: Vec::new(),
            reported: (Role::Follower, term),
        }
    }

    /// One tick of the node's logical clock (etcd `Tick`): the host calls it every tick
    /// interval (etcd `TickMs`, 100 ms) of the node's MONO clock. A leader counts towards its
    /// next heartbeat and CheckQuorum, anyone else towards its election timeout.
    pub fn tick(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        match self.role {
            Role::Leader => self.tick_heartbeat(rng, out),
            _ => self.tick_election(rng, out),
        }
        self.flush(out);
    }

    /// A message from `from` arrived (etcd `Step`): the term rules of paper §5.1 with etcd's
    /// exceptions for PreVote and CheckQuorum first, then the role's own handler.
    pub fn step(&mut self, from: NodeId, msg: RaftMsg<C>, rng: &mut Rng, out: &mut Outbox<C>) {
        let pos = self.position(from);
        assert_ne!(pos, self.me, "a node does not message itself");
        if self.step_term(from, &msg, rng, out) {
            match msg {
                RaftMsg::PreVote {
                    term,
                    last_index,
                    last_term,
                } => self.handle_vote_request(from, true, term, last_index, last_term, out),
                RaftMsg::Vote {
                    term,
                    last_index,
                    last_term,
                } => self.handle_vote_request(from, false, term, last_index, last_term, out),
                msg => match self.role {
                    Role::Leader => self.step_leader(pos, msg, out),
                    Role::PreCandidate | Role::Candidate => {
                        self.step_candidate(from, pos, msg, rng, out)
                    }
                    Role::Follower => self.step_follower(from, msg, out),
                },
            }
        }
        self.flush(out);
    }

    /// Appends a command to the leader's log and replicates it (etcd `MsgProp` in
    /// `stepLeader`): its index, or who leads if this node does not. A proposal is not
    /// guaranteed to commit: the host learns of it through [`Outbox::committed`] or not at all.
    pub fn propose(&mut self, cmd: C, out: &mut Outbox<C>) -> Result<u64, NotLeader> {
        if self.role != Role::Leader {
            return Err(NotLeader { leader: self.lead });
        }
        let index = self.append_entry(EntryData::Command(Arc::new(cmd)), out);
        self.bcast_append(out);
        self.flush(out);
        Ok(index)
    }

    /// Starts a linearizable read (thesis §6.4; etcd `MsgReadIndex` in `stepLeader`). Later,
    /// [`Outbox::reads`] gets `(ctx, index)`: serve the read once the state machine has
    /// applied `index`. `ctx` must be unique among this leader's reads of its term.
    ///
    /// With [`ReadOnlyOption::Safe`] the leader records its commit index and confirms its
    /// leadership by a heartbeat round carrying `ctx` that a quorum acknowledges. With
    /// [`ReadOnlyOption::LeaseBased`] it answers at once. Either way a leader that has not
    /// yet committed an entry of its own term holds the read until it has (its commit index
    /// might be behind its predecessor's). A leader that steps down drops its waiting reads:
    /// the host times them out and retries.
    pub fn read_index(&mut self, ctx: u64, out: &mut Outbox<C>) -> Result<(), NotLeader> {
        if self.role != Role::Leader {
            return Err(NotLeader { leader: self.lead });
        }
        if self.config.peers.len() == 1 {
            out.reads.push((ctx, self.commit));
        } else if !self.committed_entry_in_current_term() {
            self.pending_reads.push(ctx);
        } else {
            self.send_read_index_response(ctx, out);
        }
        self.flush(out);
        Ok(())
    }

    /// What must survive a crash.
    pub fn durable(&self) -> &Durable<C> {
        &self.durable
    }

    /// Gives up the node, keeping only what survives a crash.
    pub fn into_durable(self) -> Durable<C> {
        self.durable
    }

    /// The node's settings.
    pub fn config(&self) -> &RaftConfig {
        &self.config
    }

    /// The node's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The node's current term.
    pub fn term(&self) -> u64 {
        self.durable.term
    }

    /// The leader of the current term, if this node knows it (itself when leading).
    pub fn leader(&self) -> Option<NodeId> {
        self.lead
    }

    /// The commit index this node knows.
    pub fn commit(&self) -> u64 {
        self.commit
    }

    /// How many entries the log holds (never compacted here: it grows with every write).
    pub fn log_len(&self) -> usize {
        self.durable.log.len()
    }

    /// The index of the last entry in the log.
    pub fn last_index(&self) -> u64 {
        self.durable.last_index()
    }

    /// The randomized election timeout in force, in ticks.
    pub fn randomized_election_timeout(&self) -> u32 {
        self.randomized_election_timeout
    }

    /// Whether the commit index is at an entry of the current term (etcd
    /// `committedEntryInCurrentTerm`): a leader may serve reads, and is ready for work that
    /// needs its predecessors' entries applied, only from then on.
    pub fn committed_entry_in_current_term(&self) -> bool {
        self.durable.term_at(self.commit) == Some(self.term())
    }

    // Ticks.

    /// etcd `tickElection`.
    fn tick_election(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        self.election_elapsed += 1;
        if self.election_elapsed >= self.randomized_election_timeout {
            self.election_elapsed = 0;
            self.hup(rng, out);
        }
    }

    /// etcd `tickHeartbeat`: CheckQuorum every election timeout, heartbeats every heartbeat
    /// timeout.
    fn tick_heartbeat(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        self.heartbeat_elapsed += 1;
        self.election_elapsed += 1;
        if self.election_elapsed >= self.config.election_ticks {
            self.election_elapsed = 0;
            if self.config.check_quorum {
                self.check_quorum(rng, out);
            }
        }
        if self.role != Role::Leader {
            return;
        }
        if self.heartbeat_elapsed >= self.config.heartbeat_ticks {
            self.heartbeat_elapsed = 0;
            let ctx = self.read_queue.last_ctx();
            self.bcast_heartbeat(ctx, out);
        }
    }

    /// etcd `MsgCheckQuorum` in `stepLeader`: step down unless a quorum (counting this node)
    /// was heard from since the last check, then forget who was.
    fn check_quorum(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        let active = self.progress.iter().filter(|p| p.recent_active).count();
        if active < self.config.quorum() {
            let term = self.term();
            self.become_follower(term, None, rng, out);
        }
        for (i, p) in self.progress.iter_mut().enumerate() {
            if i != self.me {
                p.recent_active = false;
            }
        }
    }

    // Elections.

    /// etcd `hup`: start a (pre-)campaign unless leading.
    fn hup(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        if self.role == Role::Leader {
            return;
        }
        let kind = if self.config.pre_vote {
            Campaign::Pre
        } else {
            Campaign::Election
        };
        self.campaign(kind, rng, out);
    }

    /// etcd `campaign`: a pre-candidate asks at its term + 1 without bumping its term; a
    /// candidate bumps its term and votes for itself (paper §5.2).
    fn campaign(&mut self, kind: Campaign, rng: &mut Rng, out: &mut Outbox<C>) {
        let term = match kind {
            Campaign::Pre => {
                self.become_pre_candidate(out);
                self.term() + 1
            }
            Campaign::Election => {
                self.become_candidate(rng, out);
                self.term()
            }
        };
        let (last_index, last_term) = (self.durable.last_index(), self.durable.last_term());
        for (i, &peer) in self.config.peers.iter().enumerate() {
            if i == self.me {
                continue;
            }
            let msg = match kind {
                Campaign::Pre => RaftMsg::PreVote {
                    term,
                    last_index,
                    last_term,
                },
                Campaign::Election => RaftMsg::Vote {
                    term,
                    last_index,
                    last_term,
                },
            };
            out.msgs.push((peer, msg));
        }
        // Its own vote counts at once: the vote is already durable (etcd counts it when the
        // self-addressed response comes back after persisting).
        let me = self.me;
        if self.poll(me, true) == Tally::Won {
            self.win(rng, out);
        }
    }

    /// A (pre-)campaign won: a pre-candidate runs the real election, a candidate leads.
    fn win(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        if self.role == Role::PreCandidate {
            self.campaign(Campaign::Election, rng, out);
        } else {
            self.become_leader(rng, out);
            self.bcast_append(out);
        }
    }

    /// etcd `poll`: records the first answer of each voter and counts.
    fn poll(&mut self, pos: usize, granted: bool) -> Tally {
        if self.votes[pos].is_none() {
            self.votes[pos] = Some(granted);
        }
        let yes = self.votes.iter().filter(|v| **v == Some(true)).count();
        let no = self.votes.iter().filter(|v| **v == Some(false)).count();
        let q = self.config.quorum();
        if yes >= q {
            Tally::Won
        } else if no > self.config.peers.len() - q {
            Tally::Lost
        } else {
            Tally::Pending
        }
    }

    /// The term rules of etcd `Step`; false when the message is dealt with (or dropped).
    fn step_term(
        &mut self,
        from: NodeId,
        msg: &RaftMsg<C>,
        rng: &mut Rng,
        out: &mut Outbox<C>,
    ) -> bool {
        let term = msg.term();
        let vote_request = matches!(msg, RaftMsg::PreVote { .. } | RaftMsg::Vote { .. });
        if term > self.term() {
            // CheckQuorum's lease: a node that heard from a leader within the election
            // timeout neither bumps its term nor votes (thesis §4.2.3, etcd `inLease`).
            let in_lease = self.config.check_quorum
                && self.lead.is_some()
                && self.election_elapsed < self.config.election_ticks;
            if vote_request && in_lease {
                return false;
            }
            match msg {
                // Never change the term for a pre-vote, nor for a granted pre-vote: it
                // echoes the term the pre-candidate asked about.
                RaftMsg::PreVote { .. } | RaftMsg::PreVoteResp { reject: false, .. } => {}
                RaftMsg::Append { .. } | RaftMsg::Heartbeat { .. } => {
                    self.become_follower(term, Some(from), rng, out)
                }
                _ => self.become_follower(term, None, rng, out),
            }
        } else if term < self.term() {
            match msg {
                // A stale leader learns our term from this answer and steps down. With
                // CheckQuorum or PreVote a node that bumped its term in a partition would
                // otherwise never be able to rejoin (etcd `Step`, `m.Term < r.Term`).
                RaftMsg::Append { .. } | RaftMsg::Heartbeat { .. }
                    if self.config.check_quorum || self.config.pre_vote =>
                {
                    out.msgs.push((from, self.append_resp(0, None)));
                }
                RaftMsg::PreVote { .. } => {
                    let resp = RaftMsg::PreVoteResp {
                        term: self.term(),
                        reject: true,
                    };
                    out.msgs.push((from, resp));
                }
                _ => {}
            }
            return false;
        }
        true
    }

    /// etcd `MsgVote`/`MsgPreVote` in `Step`: grant if this is a repeat of our vote, or we
    /// have not voted and know no leader, or it is a pre-vote for a later term; and the
    /// candidate's log is at least as up to date as ours (paper §5.4.1).
    fn handle_vote_request(
        &mut self,
        from: NodeId,
        pre: bool,
        term: u64,
        last_index: u64,
        last_term: u64,
        out: &mut Outbox<C>,
    ) {
        let can_vote = self.durable.voted_for == Some(from)
            || (self.durable.voted_for.is_none() && self.lead.is_none())
            || (pre && term > self.term());
        let up_to_date = last_term > self.durable.last_term()
            || (last_term == self.durable.last_term() && last_index >= self.durable.last_index());
        let (term, reject) = if can_vote && up_to_date {
            if !pre {
                // Only real votes are recorded, and they restart the election timer.
                self.election_elapsed = 0;
                self.durable.voted_for = Some(from);
            }
            (term, false)
        } else {
            (self.term(), true)
        };
        let resp = if pre {
            RaftMsg::PreVoteResp { term, reject }
        } else {
            RaftMsg::VoteResp { term, reject }
        };
        out.msgs.push((from, resp));
    }

    /// etcd `stepCandidate` (shared by pre-candidates and candidates).
    fn step_candidate(
        &mut self,
        from: NodeId,
        pos: usize,
        msg: RaftMsg<C>,
        rng: &mut Rng,
        out: &mut Outbox<C>,
    ) {
        let term = self.term();
        match msg {
            RaftMsg::Append { .. } | RaftMsg::Heartbeat { .. } => {
                // A leader of our term exists (paper §5.2): follow it.
                self.become_follower(term, Some(from), rng, out);
                self.step_follower(from, msg, out);
            }
            // Unlike etcd, a grant left over from a pre-campaign at an earlier term (it echoes
            // that campaign's term, our current one) is not counted.
            RaftMsg::PreVoteResp {
                term: asked,
                reject,
            } if self.role == Role::PreCandidate && (reject || asked == term + 1) => {
                self.count_vote(pos, !reject, rng, out);
            }
            RaftMsg::VoteResp { reject, .. } if self.role == Role::Candidate => {
                self.count_vote(pos, !reject, rng, out);
            }
            _ => {}
        }
    }

    fn count_vote(&mut self, pos: usize, granted: bool, rng: &mut Rng, out: &mut Outbox<C>) {
        match self.poll(pos, granted) {
            Tally::Won => self.win(rng, out),
            Tally::Lost => {
                // A lost pre-vote's rejections carry our own term at most (a higher one made
                // us a follower already), so the term stays.
                let term = self.term();
                self.become_follower(term, None, rng, out);
            }
            Tally::Pending => {}
        }
    }

    // Role changes.

    /// etcd `reset`: a new term forgets the vote; every role change restarts the timers and
    /// draws a new randomized election timeout.
    fn reset(&mut self, term: u64, rng: &mut Rng) {
        assert!(term >= self.term(), "terms never go back");
        if term != self.term() {
            self.durable.term = term;
            self.durable.voted_for = None;
        }
        self.lead = None;
        self.election_elapsed = 0;
        self.heartbeat_elapsed = 0;
        self.reset_randomized_election_timeout(rng);
        self.votes.fill(None);
        let last = self.durable.last_index();
        for (i, p) in self.progress.iter_mut().enumerate() {
            *p = Progress::new(last + 1);
            if i == self.me {
                p.matched = last;
            }
        }
        self.read_queue = ReadQueue::default();
        self.pending_reads.clear();
    }

    /// etcd `resetRandomizedElectionTimeout`: uniform in `[election, 2 * election)` ticks
    /// (paper §5.2, thesis §9.3), from the node's own stream.
    fn reset_randomized_election_timeout(&mut self, rng: &mut Rng) {
        let et = u64::from(self.config.election_ticks);
        self.randomized_election_timeout = (et + rng.below(et)) as u32;
    }

    fn become_follower(
        &mut self,
        term: u64,
        lead: Option<NodeId>,
        rng: &mut Rng,
        out: &mut Outbox<C>,
    ) {
        self.reset(term, rng);
        self.lead = lead;
        self.set_role(Role::Follower, out);
    }

    /// etcd `becomePreCandidate`: neither the term nor the vote changes, nor the timers.
    fn become_pre_candidate(&mut self, out: &mut Outbox<C>) {
        assert_ne!(self.role, Role::Leader, "a leader does not campaign");
        self.votes.fill(None);
        self.lead = None;
        self.set_role(Role::PreCandidate, out);
    }

    fn become_candidate(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        assert_ne!(self.role, Role::Leader, "a leader does not campaign");
        let term = self.term() + 1;
        self.reset(term, rng);
        self.durable.voted_for = Some(self.config.me);
        self.set_role(Role::Candidate, out);
    }

    /// etcd `becomeLeader`: start replicating from the end of our log, and append the empty
    /// entry of the new term (thesis §6.4).
    fn become_leader(&mut self, rng: &mut Rng, out: &mut Outbox<C>) {
        assert_eq!(
            self.role,
            Role::Candidate,
            "only a candidate becomes leader"
        );
        let term = self.term();
        self.reset(term, rng);
        self.lead = Some(self.config.me);
        let me = self.me;
        self.progress[me].become_replicate();
        self.progress[me].recent_active = true;
        self.set_role(Role::Leader, out);
        self.append_entry(EntryData::Empty, out);
    }

    fn set_role(&mut self, role: Role, out: &mut Outbox<C>) {
        self.role = role;
        let now = (role, self.term());
        if now != self.reported {
            self.reported = now;
            out.role_changes.push(now);
        }
    }

    // Replication.

    /// etcd `appendEntry`: the leader appends at its term and acknowledges for itself.
    fn append_entry(&mut self, data: EntryData<C>, out: &mut Outbox<C>) -> u64 {
        let entry = Entry {
            term: self.term(),
            index: self.durable.last_index() + 1,
            data,
        };
        let index = entry.index;
        out.appended.push(entry.clone());
        self.durable.log.push(entry);
        let me = self.me;
        self.progress[me].maybe_update(index);
        // Only a one-node cluster commits here; larger ones wait for acknowledgements.
        if self.maybe_commit() {
            self.release_pending_reads(out);
        }
        index
    }

    /// etcd `bcastAppend`.
    fn bcast_append(&mut self, out: &mut Outbox<C>) {
        for pos in 0..self.config.peers.len() {
            if pos != self.me {
                self.maybe_send_append(pos, true, out);
            }
        }
    }

    /// etcd `maybeSendAppend`: the entries from the follower's `next` on, unless a probe is
    /// in flight; an empty append only with `send_if_empty` (it carries the commit index).
    fn maybe_send_append(&mut self, pos: usize, send_if_empty: bool, out: &mut Outbox<C>) -> bool {
        let pr = &self.progress[pos];
        if pr.is_paused() {
            return false;
        }
        let prev_index = pr.next - 1;
        let prev_term = self
            .durable
            .term_at(prev_index)
            .expect("a follower's next index is within the leader's log");
        let hi = self
            .durable
            .last_index()
            .min(prev_index + self.config.max_append_entries);
        let entries = self.durable.log[prev_index as usize..hi as usize].to_vec();
        if entries.is_empty() && !send_if_empty {
            return false;
        }
        let n = entries.len() as u64;
        let msg = RaftMsg::Append {
            term: self.term(),
            prev_index,
            prev_term,
            entries,
            commit: self.commit,
        };
        out.msgs.push((self.config.peers[pos], msg));
        self.progress[pos].sent_entries(n);
        true
    }

    /// etcd `bcastHeartbeatWithCtx`: a follower may only learn a commit index up to what it
    /// is known to have (`min(match, commit)`), so that it never commits past its log.
    fn bcast_heartbeat(&mut self, ctx: Option<u64>, out: &mut Outbox<C>) {
        for (pos, &peer) in self.config.peers.iter().enumerate() {
            if pos == self.me {
                continue;
            }
            let commit = self.progress[pos].matched.min(self.commit);
            let msg = RaftMsg::Heartbeat {
                term: self.term(),
                commit,
                ctx,
            };
            out.msgs.push((peer, msg));
        }
    }

    /// etcd `maybeCommit` (paper §5.3-§5.4.2, Figure 8): the highest index a quorum has,
    /// committed only if its entry is of the current term.
    fn maybe_commit(&mut self) -> bool {
        // The quorum-th largest match index: the largest one that a quorum has reached. (No
        // sorted copy: this runs for every acknowledgement, and clusters are small.)
        let quorum = self.config.quorum();
        let index = self
            .progress
            .iter()
            .map(|p| p.matched)
            .filter(|&m| self.progress.iter().filter(|q| q.matched >= m).count() >= quorum)
            .max()
            .expect("the smallest match index is reached by every node");
        if index > self.commit && self.durable.term_at(index) == Some(self.term()) {
            self.commit = index;
            return true;
        }
        false
    }

    /// etcd `stepLeader` for the messages that reach it (votes were handled before).
    fn step_leader(&mut self, pos: usize, msg: RaftMsg<C>, out: &mut Outbox<C>) {
        match msg {
            RaftMsg::AppendResp {
                index,
                reject,
                hint_index,
                hint_term,
                ..
            } => {
                self.progress[pos].recent_active = true;
                if reject {
                    self.handle_append_reject(pos, index, hint_index, hint_term, out);
                } else {
                    self.handle_append_ack(pos, index, out);
                }
            }
            RaftMsg::HeartbeatResp { ctx, .. } => self.handle_heartbeat_resp(pos, ctx, out),
            // Vote answers of a campaign already won, and nothing else at our term: a second
            // leader of the same term would be a safety violation, which the checker catches.
            _ => {}
        }
    }

    /// etcd `MsgAppResp` with `Reject`: back off to where the logs may match (paper §5.3,
    /// with etcd's term-based hint).
    fn handle_append_reject(
        &mut self,
        pos: usize,
        rejected: u64,
        hint_index: u64,
        hint_term: u64,
        out: &mut Outbox<C>,
    ) {
        let next_probe = if hint_term > 0 {
            self.find_conflict_by_term(hint_index, hint_term).0
        } else {
            hint_index
        };
        let pr = &mut self.progress[pos];
        if pr.maybe_decr_to(rejected, next_probe) {
            if pr.state == ProgressState::Replicate {
                pr.become_probe();
            }
            self.maybe_send_append(pos, true, out);
        }
    }

    /// etcd `MsgAppResp` accepted: advance the follower's match, maybe the commit index, and
    /// keep the entries flowing.
    fn handle_append_ack(&mut self, pos: usize, index: u64, out: &mut Outbox<C>) {
        let pr = &mut self.progress[pos];
        let probing = pr.state == ProgressState::Probe;
        if !(pr.maybe_update(index) || (pr.matched == index && probing)) {
            return;
        }
        if probing {
            pr.become_replicate();
        }
        if self.maybe_commit() {
            // The commit index moved within our term: reads held for it may go, and the
            // followers should learn it.
            self.release_pending_reads(out);
            self.bcast_append(out);
        }
        while self.maybe_send_append(pos, false, out) {}
    }

    /// etcd `MsgHeartbeatResp`: the follower is alive; resume a probe; count a read's
    /// acknowledgement.
    fn handle_heartbeat_resp(&mut self, pos: usize, ctx: Option<u64>, out: &mut Outbox<C>) {
        let pr = &mut self.progress[pos];
        pr.recent_active = true;
        pr.paused = false;
        if pr.matched < self.durable.last_index() || pr.state == ProgressState::Probe {
            self.maybe_send_append(pos, true, out);
        }
        let Some(ctx) = ctx else { return };
        if self.config.read_only != ReadOnlyOption::Safe {
            return;
        }
        let from = self.config.peers[pos];
        if self.read_queue.ack(from, ctx).unwrap_or(0) < self.config.quorum() {
            return;
        }
        for r in self.read_queue.advance(ctx) {
            out.reads.push((r.ctx, r.index));
        }
    }

    /// etcd `releasePendingReadIndexMessages`.
    fn release_pending_reads(&mut self, out: &mut Outbox<C>) {
        if !self.committed_entry_in_current_term() {
            return;
        }
        for ctx in std::mem::take(&mut self.pending_reads) {
            self.send_read_index_response(ctx, out);
        }
    }

    /// etcd `sendMsgReadIndexResponse` on the leader.
    fn send_read_index_response(&mut self, ctx: u64, out: &mut Outbox<C>) {
        match self.config.read_only {
            ReadOnlyOption::Safe => {
                self.read_queue.add(self.commit, ctx);
                self.read_queue.ack(self.config.me, ctx);
                self.bcast_heartbeat(Some(ctx), out);
            }
            ReadOnlyOption::LeaseBased => out.reads.push((ctx, self.commit)),
        }
    }

    /// etcd `stepFollower`: a leader of our term is alive.
    fn step_follower(&mut self, from: NodeId, msg: RaftMsg<C>, out: &mut Outbox<C>) {
        match msg {
            RaftMsg::Append {
                prev_index,
                prev_term,
                entries,
                commit,
                ..
            } => {
                self.election_elapsed = 0;
                self.lead = Some(from);
                self.handle_append(from, prev_index, prev_term, entries, commit, out);
            }
            RaftMsg::Heartbeat { commit, ctx, .. } => {
                self.election_elapsed = 0;
                self.lead = Some(from);
                self.commit_to(commit);
                let resp = RaftMsg::HeartbeatResp {
                    term: self.term(),
                    ctx,
                };
                out.msgs.push((from, resp));
            }
            _ => {}
        }
    }

    /// etcd `handleAppendEntries` (paper §5.3): the consistency check on `prev`, then append
    /// from the first conflicting entry, and commit up to what the message vouches for.
    fn handle_append(
        &mut self,
        from: NodeId,
        prev_index: u64,
        prev_term: u64,
        entries: Vec<Entry<C>>,
        commit: u64,
        out: &mut Outbox<C>,
    ) {
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(
                e.index,
                prev_index + 1 + i as u64,
                "an append is consecutive"
            );
        }
        if prev_index < self.commit {
            // Everything up to our commit index matches already.
            out.msgs.push((from, self.append_resp(self.commit, None)));
            return;
        }
        if self.durable.term_at(prev_index) != Some(prev_term) {
            let hint = prev_index.min(self.durable.last_index());
            let (hint_index, hint_term) = self.find_conflict_by_term(hint, prev_term);
            let resp = self.append_resp(prev_index, Some((hint_index, hint_term)));
            out.msgs.push((from, resp));
            return;
        }
        let last_new = prev_index + entries.len() as u64;
        let conflict = entries
            .iter()
            .position(|e| self.durable.term_at(e.index) != Some(e.term));
        if let Some(at) = conflict {
            let first = entries[at].index;
            assert!(
                first > self.commit,
                "entry {first} conflicts with committed entry (commit {})",
                self.commit
            );
            self.durable.log.truncate(first as usize - 1);
            out.appended.extend_from_slice(&entries[at..]);
            self.durable.log.extend(entries.into_iter().skip(at));
        }
        // Only up to the last entry this message vouches for: our log may diverge after it.
        self.commit_to(commit.min(last_new));
        out.msgs.push((from, self.append_resp(last_new, None)));
    }

    fn append_resp(&self, index: u64, reject: Option<(u64, u64)>) -> RaftMsg<C> {
        let (hint_index, hint_term) = reject.unwrap_or((0, 0));
        RaftMsg::AppendResp {
            term: self.term(),
            index,
            reject: reject.is_some(),
            hint_index,
            hint_term,
        }
    }

    /// etcd `raftLog.findConflictByTerm`: the last index at or below `index` whose term is
    /// at most `term`, with that term.
    fn find_conflict_by_term(&self, index: u64, term: u64) -> (u64, u64) {
        let mut i = index.min(self.durable.last_index());
        while i > 0 {
            let t = self.durable.term_at(i).expect("within the log");
            if t <= term {
                return (i, t);
            }
            i -= 1;
        }
        (0, 0)
    }

    /// etcd `raftLog.commitTo`: the commit index never goes back, nor past the log.
    fn commit_to(&mut self, index: u64) {
        if index > self.commit {
            assert!(
                index <= self.durable.last_index(),
                "commit {index} is past the last index {}: was the log lost?",
                self.durable.last_index()
            );
            self.commit = index;
        }
    }

    /// Hands out the entries committed since the last call.
    fn flush(&mut self, out: &mut Outbox<C>) {
        while self.emitted < self.commit {
            self.emitted += 1;
            let e = self
                .durable
                .entry(self.emitted)
                .expect("committed entries exist");
            out.committed.push(e.clone());
        }
    }

    fn position(&self, node: NodeId) -> usize {
        self.config
            .peers
            .binary_search(&node)
            .unwrap_or_else(|_| panic!("{node:?} is not a peer"))
    }
}
