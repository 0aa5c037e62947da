//! Unit tests of the Raft core on a tiny in-memory network: instant delivery in send order,
//! directed links that can be cut, and ticks driven by hand.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use lockstep_sim::{NodeId, Rng};

use super::{Durable, Entry, EntryData, Outbox, Raft, RaftConfig, RaftMsg, ReadOnlyOption, Role};

struct Cluster {
    nodes: Vec<Raft<u64>>,
    rngs: Vec<Rng>,
    queue: VecDeque<(NodeId, NodeId, RaftMsg<u64>)>,
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Everything but messages each node produced, accumulated.
    outs: Vec<Outbox<u64>>,
}

fn id(i: usize) -> NodeId {
    NodeId(i as u32)
}

/// A log of commands numbered by index, with the given terms.
fn log(terms: &[u64]) -> Vec<Entry<u64>> {
    terms
        .iter()
        .enumerate()
        .map(|(i, &term)| Entry {
            term,
            index: i as u64 + 1,
            data: EntryData::Command(Arc::new(i as u64 + 1)),
        })
        .collect()
}

impl Cluster {
    fn new(n: usize, seed: u64, tweak: impl Fn(&mut RaftConfig)) -> Cluster {
        Cluster::with_durable(seed, tweak, (0..n).map(|_| Durable::new()).collect())
    }

    fn with_durable(
        seed: u64,
        tweak: impl Fn(&mut RaftConfig),
        durable: Vec<Durable<u64>>,
    ) -> Cluster {
        let n = durable.len();
        let peers: Vec<NodeId> = (0..n).map(id).collect();
        let mut rngs: Vec<Rng> = (0..n)
            .map(|i| Rng::fork(seed, &format!("node/{i}")))
            .collect();
        let nodes = durable
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let mut config = RaftConfig::with_defaults(peers.clone(), id(i));
                tweak(&mut config);
                Raft::new(config, d, &mut rngs[i])
            })
            .collect();
        Cluster {
            nodes,
            rngs,
            queue: VecDeque::new(),
            cut: BTreeSet::new(),
            outs: (0..n).map(|_| Outbox::default()).collect(),
        }
    }

    fn absorb(&mut self, i: usize, mut out: Outbox<u64>) {
        for (to, msg) in out.msgs.drain(..) {
            self.queue.push_back((id(i), to, msg));
        }
        let acc = &mut self.outs[i];
        acc.committed.extend(out.committed);
        acc.reads.extend(out.reads);
        acc.role_changes.extend(out.role_changes);
        acc.appended.extend(out.appended);
    }

    fn tick(&mut self, i: usize) {
        let mut out = Outbox::default();
        self.nodes[i].tick(&mut self.rngs[i], &mut out);
        self.absorb(i, out);
    }

    fn tick_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.tick(i);
        }
    }

    /// Delivers every message, and those they cause, in send order; cut links drop.
    fn deliver(&mut self) {
        let mut budget = 100_000;
        while let Some((from, to, msg)) = self.queue.pop_front() {
            budget -= 1;
            assert!(budget > 0, "messages never settle");
            if self.cut.contains(&(from, to)) {
                continue;
            }
            let i = to.index();
            let mut out = Outbox::default();
            self.nodes[i].step(from, msg, &mut self.rngs[i], &mut out);
            self.absorb(i, out);
        }
    }

    /// Ticks every node and delivers, `n` times.
    fn run(&mut self, n: u32) {
        for _ in 0..n {
            self.tick_all();
            self.deliver();
        }
    }

    fn isolate(&mut self, i: usize) {
        for j in 0..self.nodes.len() {
            if j != i {
                self.cut.insert((id(i), id(j)));
                self.cut.insert((id(j), id(i)));
            }
        }
    }

    fn heal(&mut self) {
        self.cut.clear();
    }

    /// Node `i` times out first and wins: only it ticks until it campaigns.
    fn elect(&mut self, i: usize) {
        for _ in 0..self.nodes[i].randomized_election_timeout() {
            self.tick(i);
        }
        self.deliver();
        assert_eq!(self.nodes[i].role(), Role::Leader, "node {i} should lead");
        assert!(self.nodes[i].committed_entry_in_current_term());
    }

    fn propose(&mut self, i: usize, cmd: u64) -> u64 {
        let mut out = Outbox::default();
        let index = self.nodes[i].propose(cmd, &mut out).expect("leader");
        self.absorb(i, out);
        index
    }

    fn read(&mut self, i: usize, ctx: u64) {
        let mut out = Outbox::default();
        self.nodes[i].read_index(ctx, &mut out).expect("leader");
        self.absorb(i, out);
    }

    fn terms(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.term()).collect()
    }
}

#[test]
fn randomized_election_timeouts_are_in_range_and_cover_it() {
    let config = RaftConfig::with_defaults(vec![id(0), id(1), id(2)], id(0));
    let mut seen = [0u32; 20];
    for seed in 0..2_000 {
        let mut rng = Rng::fork(seed, "node/0");
        let raft: Raft<u64> = Raft::new(config.clone(), Durable::new(), &mut rng);
        let t = raft.randomized_election_timeout();
        assert!((10..20).contains(&t), "timeout {t} out of [10, 20)");
        seen[t as usize] += 1;
    }
    assert!(seen[10..20].iter().all(|&n| n > 100), "{seen:?}");
}

#[test]
fn a_follower_campaigns_exactly_when_its_randomized_timeout_elapses_and_redraws_it() {
    for seed in 0..200 {
        let mut c = Cluster::new(3, seed, |_| {});
        c.isolate(0);
        let mut timeouts = Vec::new();
        for _ in 0..5 {
            let t = c.nodes[0].randomized_election_timeout();
            timeouts.push(t);
            for k in 1..=t {
                c.tick(0);
                let asked = c.queue.len() == 2;
                assert_eq!(asked, k == t, "seed {seed}: tick {k} of {t}");
            }
            assert_eq!(c.nodes[0].role(), Role::PreCandidate);
            c.deliver();
            // A pre-campaign without answers never ends on its own; etcd's pre-candidate
            // campaigns again after the same timeout, which it does not redraw.
            assert_eq!(c.nodes[0].randomized_election_timeout(), t);
        }
        assert_eq!(c.nodes[0].term(), 0, "pre-votes do not bump the term");
        assert!(timeouts.iter().all(|t| (10..20).contains(t)));
    }
}

#[test]
fn a_leader_is_elected_and_commits_its_empty_entry_then_commands() {
    let mut c = Cluster::new(3, 1, |_| {});
    c.elect(1);
    assert_eq!(c.terms(), vec![1, 1, 1]);
    let index = c.propose(1, 42);
    c.deliver();
    c.run(2);
    for n in &c.nodes {
        assert_eq!(n.commit(), index);
        assert_eq!(n.leader(), Some(id(1)));
    }
    let applied: Vec<u64> = c.outs[0].committed.iter().map(|e| e.index).collect();
    assert_eq!(applied, vec![1, 2]);
    assert_eq!(
        c.outs[0].committed[1].data,
        EntryData::Command(Arc::new(42))
    );
    assert_eq!(
        c.outs[1].role_changes,
        vec![
            (Role::PreCandidate, 0),
            (Role::Candidate, 1),
            (Role::Leader, 1)
        ]
    );
}

#[test]
fn pre_vote_keeps_a_partitioned_node_from_bumping_its_term_and_disrupting_on_rejoin() {
    for seed in 0..50 {
        let mut c = Cluster::new(3, seed, |_| {});
        c.elect(0);
        c.isolate(2);
        c.run(200);
        assert_eq!(c.terms(), vec![1, 1, 1], "seed {seed}");
        assert_ne!(c.nodes[2].role(), Role::Candidate);
        c.heal();
        c.run(30);
        assert_eq!(c.terms(), vec![1, 1, 1], "seed {seed}: the rejoin is quiet");
        assert_eq!(c.nodes[0].role(), Role::Leader);
        assert_eq!(c.nodes[2].leader(), Some(id(0)));
    }
}

#[test]
fn without_pre_vote_a_rejoining_node_bumps_terms_and_unseats_the_leader() {
    let mut c = Cluster::new(3, 7, |cfg| cfg.pre_vote = false);
    c.elect(0);
    c.isolate(2);
    c.run(200);
    let partitioned = c.nodes[2].term();
    assert!(
        partitioned > 5,
        "an isolated candidate keeps bumping: {partitioned}"
    );
    c.heal();
    c.run(1);
    // Its answer to the leader's heartbeat carries the higher term: the leader steps down.
    assert_ne!(c.nodes[0].role(), Role::Leader);
    assert!(c.nodes[0].term() >= partitioned);
}

#[test]
fn check_quorum_steps_a_cut_off_leader_down_between_one_and_two_election_timeouts() {
    // etcd checks every election timeout whether a quorum was heard from since the last
    // check. Cut off right after a check that answers still reached, a leader passes the next
    // check and fails the one after: it leads on for up to two election timeouts. Cut off
    // just before a check (here, in the instant network, the heartbeat answers of the tick
    // of the check still arrive), it steps down one election timeout and a tick later. The
    // partition falls at every phase of the cycle.
    let mut seen = Vec::new();
    for phase in 0..10 {
        let mut c = Cluster::new(5, 3, |_| {});
        c.elect(2);
        c.run(phase);
        c.isolate(2);
        let mut ticks = 0;
        while c.nodes[2].role() == Role::Leader {
            c.tick(2);
            c.deliver();
            ticks += 1;
            assert!(
                ticks <= 20,
                "phase {phase}: still leading after {ticks} ticks"
            );
        }
        assert!(
            ticks >= 10,
            "phase {phase}: stepped down after {ticks} ticks"
        );
        assert_eq!(c.nodes[2].role(), Role::Follower);
        assert_eq!(c.nodes[2].term(), 1, "stepping down keeps the term");
        seen.push(ticks);
    }
    assert_eq!(seen, vec![20, 19, 18, 17, 16, 15, 14, 13, 12, 11]);
}

#[test]
fn without_check_quorum_a_cut_off_leader_leads_on() {
    let mut c = Cluster::new(5, 3, |cfg| cfg.check_quorum = false);
    c.elect(2);
    c.isolate(2);
    for _ in 0..100 {
        c.tick(2);
        c.deliver();
    }
    assert_eq!(c.nodes[2].role(), Role::Leader);
}

#[test]
fn check_quorum_makes_followers_ignore_votes_while_a_leader_is_alive() {
    let mut c = Cluster::new(3, 5, |cfg| cfg.pre_vote = false);
    c.elect(0);
    c.run(3);
    // Node 2 campaigns right away (as if its timer fired early): node 1 heard from the
    // leader within the election timeout, so it ignores the request and keeps its term.
    let mut out = Outbox::default();
    for _ in 0..c.nodes[2].randomized_election_timeout() {
        // Not delivering: node 2 stops hearing from the leader.
        c.nodes[2].tick(&mut c.rngs[2], &mut out);
    }
    assert_eq!(c.nodes[2].role(), Role::Candidate);
    let vote = out
        .msgs
        .iter()
        .find(|(to, _)| *to == id(1))
        .map(|(_, m)| m.clone())
        .expect("a vote request to node 1");
    let mut out1 = Outbox::default();
    c.nodes[1].step(id(2), vote, &mut c.rngs[1], &mut out1);
    assert!(
        out1.is_empty(),
        "in lease: no answer, no term change: {out1:?}"
    );
    assert_eq!(c.nodes[1].term(), 1);
}

#[test]
fn read_index_waits_for_a_quorum_to_acknowledge_a_heartbeat() {
    let mut c = Cluster::new(3, 11, |_| {});
    c.elect(0);
    c.propose(0, 5);
    c.deliver();
    let commit = c.nodes[0].commit();
    c.isolate(0);
    c.read(0, 77);
    assert!(c.outs[0].reads.is_empty(), "no read before the round");
    c.deliver(); // Heartbeats with ctx 77 are lost.
    assert!(c.outs[0].reads.is_empty());
    // One follower hears the next heartbeat, which carries the pending ctx: with the
    // leader's own acknowledgement that is a quorum of three.
    c.cut.remove(&(id(0), id(1)));
    c.cut.remove(&(id(1), id(0)));
    c.tick(0);
    c.deliver();
    assert_eq!(c.outs[0].reads, vec![(77, commit)]);
}

#[test]
fn read_index_of_a_new_leader_waits_for_its_empty_entry_to_commit() {
    let mut c = Cluster::new(3, 13, |_| {});
    for _ in 0..c.nodes[1].randomized_election_timeout() {
        c.tick(1);
    }
    // Deliver the election but not the leader's first append.
    while c.nodes[1].role() != Role::Leader {
        let (from, to, msg) = c.queue.pop_front().expect("election messages");
        let mut out = Outbox::default();
        let i = to.index();
        c.nodes[i].step(from, msg, &mut c.rngs[i], &mut out);
        c.absorb(i, out);
    }
    assert!(!c.nodes[1].committed_entry_in_current_term());
    c.read(1, 9);
    assert!(c.outs[1].reads.is_empty());
    c.deliver();
    assert!(c.nodes[1].committed_entry_in_current_term());
    assert_eq!(c.outs[1].reads, vec![(9, 1)]);
}

#[test]
fn lease_based_reads_answer_at_once_without_messages() {
    let mut c = Cluster::new(3, 17, |cfg| cfg.read_only = ReadOnlyOption::LeaseBased);
    c.elect(2);
    c.isolate(2);
    let mut out = Outbox::default();
    c.nodes[2].read_index(4, &mut out).expect("leader");
    assert_eq!(out.reads, vec![(4, c.nodes[2].commit())]);
    assert!(out.msgs.is_empty());
}

#[test]
fn reads_and_proposals_on_a_follower_name_the_leader() {
    let mut c = Cluster::new(3, 19, |_| {});
    c.elect(1);
    let mut out = Outbox::default();
    let err = c.nodes[0].propose(1, &mut out).unwrap_err();
    assert_eq!(err.leader, Some(id(1)));
    let err = c.nodes[2].read_index(1, &mut out).unwrap_err();
    assert_eq!(err.leader, Some(id(1)));
    assert!(out.is_empty());
}

#[test]
fn a_leader_commits_an_earlier_terms_entry_only_with_one_of_its_own() {
    // Paper Figure 8: entry 2 (term 2) is on a majority, but the term-3 leader must not
    // commit it by counting; it commits once its own entry 3 is on a majority.
    let durable = |term| Durable {
        term,
        voted_for: None,
        log: log(&[1, 2]),
    };
    let mut c = Cluster::with_durable(23, |_| {}, vec![durable(2), durable(2), durable(2)]);
    for _ in 0..c.nodes[0].randomized_election_timeout() {
        c.tick(0);
    }
    while c.nodes[0].role() != Role::Leader {
        let (from, to, msg) = c.queue.pop_front().expect("election messages");
        let mut out = Outbox::default();
        let i = to.index();
        c.nodes[i].step(from, msg, &mut c.rngs[i], &mut out);
        c.absorb(i, out);
    }
    c.queue.clear();
    let leader = &mut c.nodes[0];
    assert_eq!((leader.term(), leader.last_index()), (3, 3));
    let ack = |index| RaftMsg::AppendResp {
        term: 3,
        index,
        reject: false,
        hint_index: 0,
        hint_term: 0,
    };
    let mut out = Outbox::default();
    leader.step(id(1), ack(2), &mut c.rngs[0], &mut out);
    assert_eq!(
        leader.commit(),
        0,
        "a majority has entry 2, but it is of term 2"
    );
    leader.step(id(1), ack(3), &mut c.rngs[0], &mut out);
    assert_eq!(leader.commit(), 3);
    let committed: Vec<u64> = out.committed.iter().map(|e| e.index).collect();
    assert_eq!(committed, vec![1, 2, 3]);
}

#[test]
fn a_follower_with_a_divergent_tail_is_brought_in_line() {
    // Paper Figure 7: the leader of term 8 and followers missing entries or holding extra
    // uncommitted ones from terms the leader never saw.
    let leader = log(&[1, 1, 1, 4, 4, 5, 5, 6, 6, 6]);
    let logs = [
        leader.clone(),
        log(&[1, 1, 1, 4, 4, 5, 5, 6, 6]),
        log(&[1, 1, 1, 4]),
        log(&[1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3]),
        log(&[1, 1, 1, 4, 4, 4, 4]),
    ];
    let durable = logs
        .iter()
        .map(|l| Durable {
            term: 7,
            voted_for: None,
            log: l.clone(),
        })
        .collect();
    let mut c = Cluster::with_durable(29, |_| {}, durable);
    c.elect(0);
    assert_eq!(c.nodes[0].term(), 8);
    c.run(3);
    let want = c.nodes[0].durable().log.clone();
    assert_eq!(want.len(), 11, "the ten entries and the term-8 empty entry");
    for (i, n) in c.nodes.iter().enumerate() {
        assert_eq!(n.durable().log, want, "node {i}");
        assert_eq!(n.commit(), 11);
    }
}

#[test]
fn a_restarted_node_replays_its_log_from_index_one_as_it_learns_the_commit_index() {
    let mut c = Cluster::new(3, 31, |_| {});
    c.elect(0);
    for cmd in 0..3 {
        c.propose(0, cmd);
    }
    c.deliver();
    c.run(1);
    let kept = c.nodes[2].clone().into_durable();
    c.nodes[2] = Raft::new(c.nodes[2].config().clone(), kept, &mut c.rngs[2]);
    c.outs[2] = Outbox::default();
    assert_eq!((c.nodes[2].commit(), c.nodes[2].term()), (0, 1));
    c.run(1);
    let replayed: Vec<u64> = c.outs[2].committed.iter().map(|e| e.index).collect();
    assert_eq!(replayed, vec![1, 2, 3, 4]);
}

#[test]
fn a_single_node_elects_itself_and_commits_alone() {
    let mut c = Cluster::new(1, 37, |_| {});
    c.elect(0);
    let index = c.propose(0, 9);
    assert_eq!(c.nodes[0].commit(), index);
    c.read(0, 1);
    assert_eq!(c.outs[0].reads, vec![(1, index)]);
}
