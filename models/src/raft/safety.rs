//! Raft's safety properties (paper §5.4 and Figure 3), checked over what hosts record: a
//! checker that reads a run's history alone, so that it also judges histories made by hand.
//!
//! A host records, for every call into its [`Raft`](super::Raft), the events of
//! [`RaftEvent::from_outbox`] (role changes, log writes, applied entries, reads), and
//! [`RaftEvent::Restarted`] when the node comes back from a crash. From those the checker
//! keeps a mirror of every node's log and asserts:
//!
//! - **Election Safety**: at most one leader per term, over every role change of every node.
//! - **Leader Append-Only**: a leader never overwrites its log.
//! - **Log Matching**: an (index, term) names one entry: the same command, after an entry of
//!   the same term, in every log at every write. By induction, two logs that share an entry
//!   are identical up to it; the final logs are also compared pairwise.
//! - **Leader Completeness**: an entry a node applied while at term T is in the log of every
//!   leader of a term above T, as that log stood when it was elected. (The leader that
//!   committed an entry applies it at the term it was committed in, so this is the paper's
//!   property exactly.)
//! - **State Machine Safety**: no two nodes apply different entries at one index; each node
//!   applies its own log's entries, in order from index 1 in every incarnation.
//! - **Read linearizability**: a read's index is at least every index any node had applied
//!   before the read was issued (thesis §6.4), so it sees every write that completed before
//!   it started.
//!
//! Harness bugs that the history itself shows (a log write past the end of the log, final
//! logs that differ from the recorded ones) are reported as [`Property::History`].

use std::collections::BTreeMap;
use std::fmt::{self, Debug};

use lockstep_sim::{NodeId, Record};

use super::{Entry, EntryData, Outbox, Role};

/// What a Raft host records.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RaftEvent<C> {
    /// The node's role or term changed.
    Role {
        /// The new role.
        role: Role,
        /// The term it holds it in.
        term: u64,
    },
    /// The node wrote these entries to its log, consecutive, replacing everything from the
    /// first one's index on.
    Appended {
        /// The entries.
        entries: Vec<Entry<C>>,
    },
    /// The node applied a committed entry.
    Applied {
        /// The node's term when it learned the entry was committed.
        term: u64,
        /// The entry.
        entry: Entry<C>,
    },
    /// The node restarted after a crash: it applies again from index 1.
    Restarted,
    /// The node, leading, issued a read.
    ReadIssued {
        /// The read's context.
        ctx: u64,
    },
    /// The read may be served once `index` is applied.
    ReadReady {
        /// The read's context.
        ctx: u64,
        /// Its read index.
        index: u64,
    },
}

impl<C: Clone> RaftEvent<C> {
    /// The events of one call's outbox, in the order the checker needs them: role changes,
    /// then log writes, then applied entries (at the node's `term` after the call), then
    /// reads that became ready.
    pub fn from_outbox(term: u64, out: &Outbox<C>) -> Vec<RaftEvent<C>> {
        let mut v = Vec::new();
        for &(role, term) in &out.role_changes {
            v.push(RaftEvent::Role { role, term });
        }
        if !out.appended.is_empty() {
            v.push(RaftEvent::Appended {
                entries: out.appended.clone(),
            });
        }
        for e in &out.committed {
            v.push(RaftEvent::Applied {
                term,
                entry: e.clone(),
            });
        }
        for &(ctx, index) in &out.reads {
            v.push(RaftEvent::ReadReady { ctx, index });
        }
        v
    }
}

/// The property a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    /// Two leaders in one term.
    ElectionSafety,
    /// A leader overwrote its log.
    LeaderAppendOnly,
    /// Two logs disagree before an entry they share.
    LogMatching,
    /// A leader lacks a committed entry of an earlier term.
    LeaderCompleteness,
    /// Two nodes applied different entries at one index, or a node applied out of order or
    /// something its log does not hold.
    StateMachineSafety,
    /// A read missed a write that completed before it was issued.
    ReadLinearizability,
    /// The history contradicts itself (a harness bug).
    History,
}

/// One broken property.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Violation {
    /// Which.
    pub property: Property,
    /// True time of the event that showed it (the end of the run for final-log checks).
    pub time_ns: u64,
    /// What happened, with nodes, indexes and terms.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} at {} ns: {}",
            self.property, self.time_ns, self.detail
        )
    }
}

/// What a clean run contained.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Summary {
    /// Leaders elected.
    pub elections: usize,
    /// The highest term seen.
    pub max_term: u64,
    /// The highest index any node applied.
    pub max_applied: u64,
    /// Reads checked.
    pub reads: usize,
}

/// The most violations reported; a broken run can otherwise produce thousands.
const MAX_VIOLATIONS: usize = 50;

/// Checks a run: its history, in order, and every node's log at the end.
pub fn check<C: Clone + Debug + Eq>(
    history: &[Record<RaftEvent<C>>],
    final_logs: &[(NodeId, &[Entry<C>])],
) -> Result<Summary, Vec<Violation>> {
    let mut c = Checker::default();
    for r in history {
        c.now = r.time.as_nanos();
        c.observe(r.node, &r.event);
    }
    c.leader_completeness();
    c.final_logs(final_logs);
    if c.violations.is_empty() {
        Ok(c.summary)
    } else {
        Err(c.violations)
    }
}

/// A committed entry, as first applied.
#[derive(Debug)]
struct Committed<C> {
    term: u64,
    data: EntryData<C>,
    node: NodeId,
    /// The lowest term at which any node applied it.
    known_at: u64,
}

/// A leader's log when it was elected.
#[derive(Debug)]
struct LeaderLog {
    node: NodeId,
    term: u64,
    time_ns: u64,
    /// The term of each entry, by index - 1.
    terms: Vec<u64>,
}

#[derive(Debug)]
struct Checker<C> {
    now: u64,
    violations: Vec<Violation>,
    summary: Summary,
    leaders: BTreeMap<u64, NodeId>,
    roles: BTreeMap<NodeId, (Role, u64)>,
    logs: BTreeMap<NodeId, Vec<Entry<C>>>,
    /// (index, term) -> (data, term of the entry before, who wrote it first).
    ghost: BTreeMap<(u64, u64), (EntryData<C>, u64, NodeId)>,
    leader_logs: Vec<LeaderLog>,
    committed: BTreeMap<u64, Committed<C>>,
    applied: BTreeMap<NodeId, u64>,
    /// Reads issued and not yet ready: (node, ctx) -> the highest index applied anywhere
    /// before the read was issued.
    reads: BTreeMap<(NodeId, u64), u64>,
}

impl<C> Default for Checker<C> {
    fn default() -> Checker<C> {
        Checker {
            now: 0,
            violations: Vec::new(),
            summary: Summary::default(),
            leaders: BTreeMap::new(),
            roles: BTreeMap::new(),
            logs: BTreeMap::new(),
            ghost: BTreeMap::new(),
            leader_logs: Vec::new(),
            committed: BTreeMap::new(),
            applied: BTreeMap::new(),
            reads: BTreeMap::new(),
        }
    }
}

impl<C: Clone + Debug + Eq> Checker<C> {
    fn violate(&mut self, property: Property, detail: String) {
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(Violation {
                property,
                time_ns: self.now,
                detail,
            });
        }
    }

    fn observe(&mut self, node: NodeId, event: &RaftEvent<C>) {
        match event {
            RaftEvent::Role { role, term } => self.role(node, *role, *term),
            RaftEvent::Appended { entries } => self.appended(node, entries),
            RaftEvent::Applied { term, entry } => self.applied(node, *term, entry),
            RaftEvent::Restarted => {
                self.applied.insert(node, 0);
                if let Some(r) = self.roles.get_mut(&node) {
                    r.0 = Role::Follower;
                }
                self.reads.retain(|&(n, _), _| n != node);
            }
            RaftEvent::ReadIssued { ctx } => {
                self.reads.insert((node, *ctx), self.summary.max_applied);
            }
            RaftEvent::ReadReady { ctx, index } => self.read_ready(node, *ctx, *index),
        }
    }

    fn role(&mut self, node: NodeId, role: Role, term: u64) {
        if let Some(&(_, old)) = self.roles.get(&node) {
            if term < old {
                self.violate(
                    Property::History,
                    format!("{node:?}'s term went back from {old} to {term}"),
                );
            }
        }
        self.roles.insert(node, (role, term));
        self.summary.max_term = self.summary.max_term.max(term);
        if role != Role::Leader {
            return;
        }
        self.summary.elections += 1;
        match self.leaders.get(&term) {
            Some(&other) if other != node => self.violate(
                Property::ElectionSafety,
                format!("{other:?} and {node:?} both lead term {term}"),
            ),
            _ => {
                self.leaders.insert(term, node);
            }
        }
        let terms = self
            .logs
            .get(&node)
            .map(|l| l.iter().map(|e| e.term).collect())
            .unwrap_or_default();
        self.leader_logs.push(LeaderLog {
            node,
            term,
            time_ns: self.now,
            terms,
        });
    }

    fn appended(&mut self, node: NodeId, entries: &[Entry<C>]) {
        let Some(first) = entries.first().map(|e| e.index) else {
            return;
        };
        let log = self.logs.remove(&node).unwrap_or_default();
        let log = self.write(node, log, first, entries);
        self.logs.insert(node, log);
    }

    fn write(
        &mut self,
        node: NodeId,
        mut log: Vec<Entry<C>>,
        first: u64,
        entries: &[Entry<C>],
    ) -> Vec<Entry<C>> {
        let len = log.len() as u64;
        if first == 0 || first > len + 1 {
            self.violate(
                Property::History,
                format!("{node:?} wrote index {first} after a log ending at {len}"),
            );
            return log;
        }
        if first <= len && self.roles.get(&node).map(|r| r.0) == Some(Role::Leader) {
            let term = self.roles[&node].1;
            self.violate(
                Property::LeaderAppendOnly,
                format!("{node:?}, leading term {term}, overwrote its log from index {first}"),
            );
        }
        log.truncate(first as usize - 1);
        for (i, e) in entries.iter().enumerate() {
            if e.index != first + i as u64 {
                self.violate(
                    Property::History,
                    format!("{node:?} wrote non-consecutive entries from index {first}"),
                );
                break;
            }
            let prev_term = log.last().map_or(0, |p| p.term);
            self.ghost_check(node, e, prev_term);
            log.push(e.clone());
        }
        log
    }

    /// Log Matching, one write at a time: every (index, term) ever written names the same
    /// data after the same previous term.
    fn ghost_check(&mut self, node: NodeId, e: &Entry<C>, prev_term: u64) {
        match self.ghost.get(&(e.index, e.term)) {
            Some((data, prev, writer)) if *data != e.data || *prev != prev_term => {
                let detail = format!(
                    "entry {}@term {}: {writer:?} has {} after term {prev}, {node:?} has {} \
                     after term {prev_term}",
                    e.index,
                    e.term,
                    show(data),
                    show(&e.data)
                );
                self.violate(Property::LogMatching, detail);
            }
            Some(_) => {}
            None => {
                self.ghost
                    .insert((e.index, e.term), (e.data.clone(), prev_term, node));
            }
        }
    }

    fn applied(&mut self, node: NodeId, term: u64, e: &Entry<C>) {
        let expected = self.applied.get(&node).copied().unwrap_or(0) + 1;
        if e.index != expected {
            self.violate(
                Property::StateMachineSafety,
                format!(
                    "{node:?} applied index {} where {expected} was next",
                    e.index
                ),
            );
        }
        self.applied.insert(node, e.index);
        let in_log = self
            .logs
            .get(&node)
            .and_then(|l| l.get(e.index as usize - 1))
            .is_some_and(|l| l == e);
        if !in_log {
            self.violate(
                Property::StateMachineSafety,
                format!(
                    "{node:?} applied {}@term {} ({}), which its log does not hold",
                    e.index,
                    e.term,
                    show(&e.data)
                ),
            );
        }
        self.summary.max_applied = self.summary.max_applied.max(e.index);
        match self.committed.get_mut(&e.index) {
            Some(c) if c.term != e.term || c.data != e.data => {
                let detail = format!(
                    "index {}: {:?} applied {}@term {}, {node:?} applied {}@term {}",
                    e.index,
                    c.node,
                    show(&c.data),
                    c.term,
                    show(&e.data),
                    e.term
                );
                self.violate(Property::StateMachineSafety, detail);
            }
            Some(c) => c.known_at = c.known_at.min(term),
            None => {
                let c = Committed {
                    term: e.term,
                    data: e.data.clone(),
                    node,
                    known_at: term,
                };
                self.committed.insert(e.index, c);
            }
        }
    }

    fn read_ready(&mut self, node: NodeId, ctx: u64, index: u64) {
        let Some(before) = self.reads.remove(&(node, ctx)) else {
            self.violate(
                Property::History,
                format!("{node:?} readied read {ctx}, which it did not issue"),
            );
            return;
        };
        self.summary.reads += 1;
        if index < before {
            self.violate(
                Property::ReadLinearizability,
                format!(
                    "{node:?} served read {ctx} at index {index}, but index {before} was \
                     applied before the read was issued"
                ),
            );
        }
    }

    fn leader_completeness(&mut self) {
        let mut found = Vec::new();
        for (&index, c) in &self.committed {
            for l in &self.leader_logs {
                if l.term > c.known_at && l.terms.get(index as usize - 1) != Some(&c.term) {
                    found.push((
                        l.time_ns,
                        format!(
                            "{:?} was elected for term {} without entry {index}@term {}, which \
                         {:?} applied at term {}",
                            l.node, l.term, c.term, c.node, c.known_at
                        ),
                    ));
                }
            }
        }
        for (time_ns, detail) in found {
            self.now = time_ns;
            self.violate(Property::LeaderCompleteness, detail);
        }
    }

    fn final_logs(&mut self, logs: &[(NodeId, &[Entry<C>])]) {
        for &(node, log) in logs {
            let mirror = self.logs.get(&node).map_or(&[][..], |l| &l[..]);
            if mirror != log {
                self.violate(
                    Property::History,
                    format!(
                        "{node:?}'s final log ({} entries) is not what it recorded writing \
                         ({} entries)",
                        log.len(),
                        mirror.len()
                    ),
                );
            }
        }
        for (i, &(a, la)) in logs.iter().enumerate() {
            for &(b, lb) in &logs[i + 1..] {
                if let Some(detail) = mismatch(a, la, b, lb) {
                    self.violate(Property::LogMatching, detail);
                }
            }
        }
    }
}

/// Two logs that share an entry must be identical up to it: the first difference below
/// their last shared (index, term), if any.
fn mismatch<C: Debug + Eq>(
    a: NodeId,
    la: &[Entry<C>],
    b: NodeId,
    lb: &[Entry<C>],
) -> Option<String> {
    let shared = la
        .iter()
        .zip(lb)
        .rposition(|(x, y)| x.term == y.term && x.index == y.index)?;
    let i = (0..=shared).find(|&i| la[i] != lb[i])?;
    Some(format!(
        "{a:?} and {b:?} share entry {}@term {} but differ at index {}: {}@term {} vs {}@term {}",
        la[shared].index,
        la[shared].term,
        i + 1,
        show(&la[i].data),
        la[i].term,
        show(&lb[i].data),
        lb[i].term
    ))
}

/// The debug form of an entry's data.
fn show<C: Debug>(data: &EntryData<C>) -> String {
    match data {
        EntryData::Empty => "empty".to_string(),
        EntryData::Command(c) => format!("{c:?}"),
    }
}
