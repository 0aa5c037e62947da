//! The Raft safety checker on hand-made histories: each property it checks must be able to
//! fail, and a clean history must pass.

use std::sync::Arc;

use lockstep_models::raft::safety::{Property, RaftEvent, check};
use lockstep_models::raft::{Entry, EntryData, Role};
use lockstep_sim::{NodeId, Record, Time};

type Ev = RaftEvent<u64>;
/// Final logs by node id.
type Logs = Vec<(u32, Vec<Entry<u64>>)>;

/// A history under construction: one event per millisecond.
#[derive(Default)]
struct H {
    records: Vec<Record<Ev>>,
}

fn cmd(term: u64, index: u64, c: u64) -> Entry<u64> {
    Entry {
        term,
        index,
        data: EntryData::Command(Arc::new(c)),
    }
}

fn empty(term: u64, index: u64) -> Entry<u64> {
    Entry {
        term,
        index,
        data: EntryData::Empty,
    }
}

impl H {
    fn push(&mut self, node: u32, event: Ev) -> &mut H {
        let time = Time::from_millis(self.records.len() as u64);
        self.records.push(Record {
            time,
            node: NodeId(node),
            event,
        });
        self
    }

    fn role(&mut self, node: u32, role: Role, term: u64) -> &mut H {
        self.push(node, RaftEvent::Role { role, term })
    }

    fn lead(&mut self, node: u32, term: u64) -> &mut H {
        self.role(node, Role::Leader, term)
    }

    fn append(&mut self, node: u32, entries: &[Entry<u64>]) -> &mut H {
        self.push(
            node,
            RaftEvent::Appended {
                entries: entries.to_vec(),
            },
        )
    }

    fn apply(&mut self, node: u32, term: u64, entry: Entry<u64>) -> &mut H {
        self.push(node, RaftEvent::Applied { term, entry })
    }

    /// The properties violated, given the final logs as the history left them.
    fn violated(&self, logs: &[(u32, Vec<Entry<u64>>)]) -> Vec<Property> {
        let logs: Vec<(NodeId, &[Entry<u64>])> =
            logs.iter().map(|(n, l)| (NodeId(*n), &l[..])).collect();
        match check(&self.records, &logs) {
            Ok(_) => Vec::new(),
            Err(v) => {
                let mut p: Vec<Property> = v.iter().map(|v| v.property).collect();
                p.dedup();
                p
            }
        }
    }
}

/// Node 0 leads term 1 and replicates two entries to node 1; both apply them.
fn clean() -> (H, Logs) {
    let mut h = H::default();
    let log = vec![empty(1, 1), cmd(1, 2, 10)];
    h.role(0, Role::Candidate, 1)
        .lead(0, 1)
        .append(0, &log[..1])
        .append(0, &log[1..])
        .role(1, Role::Follower, 1)
        .append(1, &log)
        .apply(0, 1, log[0].clone())
        .apply(0, 1, log[1].clone())
        .apply(1, 1, log[0].clone())
        .apply(1, 1, log[1].clone());
    (h, vec![(0, log.clone()), (1, log)])
}

#[test]
fn a_clean_history_passes() {
    let (h, logs) = clean();
    assert_eq!(h.violated(&logs), vec![]);
}

#[test]
fn two_leaders_in_one_term_break_election_safety() {
    let (mut h, logs) = clean();
    h.role(1, Role::Candidate, 1).lead(1, 1);
    assert_eq!(h.violated(&logs), vec![Property::ElectionSafety]);
}

#[test]
fn different_entries_at_one_index_and_term_break_log_matching() {
    let mut h = H::default();
    h.append(0, &[cmd(1, 1, 10)]).append(1, &[cmd(1, 1, 11)]);
    let logs = vec![(0, vec![cmd(1, 1, 10)]), (1, vec![cmd(1, 1, 11)])];
    assert_eq!(h.violated(&logs), vec![Property::LogMatching]);
}

#[test]
fn a_shared_entry_after_different_prefixes_breaks_log_matching() {
    // Both logs hold 2@term 2, but after different entries at index 1.
    let a = vec![cmd(1, 1, 10), cmd(2, 2, 20)];
    let b = vec![cmd(1, 1, 99), cmd(2, 2, 20)];
    let mut h = H::default();
    h.append(0, &a).append(1, &b);
    let logs = vec![(0, a), (1, b)];
    assert_eq!(h.violated(&logs), vec![Property::LogMatching]);
}

#[test]
fn final_logs_that_differ_before_a_shared_entry_break_log_matching() {
    // The checker also compares the final logs it is given, pairwise; here they are not what
    // the history recorded, which it reports too.
    let mut h = H::default();
    let a = vec![cmd(1, 1, 10), cmd(1, 2, 20)];
    h.append(0, &a).append(1, &a);
    let b = vec![cmd(1, 1, 11), cmd(1, 2, 20)];
    let violated = h.violated(&[(0, a), (1, b)]);
    assert!(violated.contains(&Property::LogMatching), "{violated:?}");
    assert!(violated.contains(&Property::History), "{violated:?}");
}

#[test]
fn a_leader_missing_a_committed_entry_breaks_leader_completeness() {
    let (mut h, mut logs) = clean();
    // Node 2 never got entry 2, yet becomes leader of term 2 with only entry 1.
    h.append(2, &[empty(1, 1)])
        .role(2, Role::Candidate, 2)
        .lead(2, 2)
        .append(2, &[empty(2, 2)]);
    logs.push((2, vec![empty(1, 1), empty(2, 2)]));
    let violated = h.violated(&logs);
    assert!(
        violated.contains(&Property::LeaderCompleteness),
        "{violated:?}"
    );
}

#[test]
fn different_commands_applied_at_one_index_break_state_machine_safety() {
    let mut h = H::default();
    h.append(0, &[cmd(1, 1, 10)])
        .apply(0, 1, cmd(1, 1, 10))
        .append(1, &[cmd(2, 1, 11)])
        .apply(1, 2, cmd(2, 1, 11));
    let logs = vec![(0, vec![cmd(1, 1, 10)]), (1, vec![cmd(2, 1, 11)])];
    assert_eq!(h.violated(&logs), vec![Property::StateMachineSafety]);
}

#[test]
fn applying_out_of_order_breaks_state_machine_safety() {
    let log = vec![cmd(1, 1, 10), cmd(1, 2, 20)];
    let mut h = H::default();
    h.append(0, &log).apply(0, 1, log[1].clone());
    assert_eq!(h.violated(&[(0, log)]), vec![Property::StateMachineSafety]);
}

#[test]
fn a_restart_replays_from_index_one() {
    let (mut h, logs) = clean();
    h.push(1, RaftEvent::Restarted)
        .apply(1, 1, empty(1, 1))
        .apply(1, 1, cmd(1, 2, 10));
    assert_eq!(h.violated(&logs), vec![]);
}

#[test]
fn a_leader_overwriting_its_log_breaks_leader_append_only() {
    let (mut h, mut logs) = clean();
    h.append(0, &[cmd(1, 2, 30)]);
    logs[0].1[1] = cmd(1, 2, 30);
    let violated = h.violated(&logs);
    assert!(
        violated.contains(&Property::LeaderAppendOnly),
        "{violated:?}"
    );
}

#[test]
fn a_read_behind_an_earlier_write_breaks_read_linearizability() {
    let (mut h, logs) = clean();
    h.push(0, RaftEvent::ReadIssued { ctx: 1 })
        .push(0, RaftEvent::ReadReady { ctx: 1, index: 1 });
    assert_eq!(h.violated(&logs), vec![Property::ReadLinearizability]);
    let (mut h, logs) = clean();
    h.push(0, RaftEvent::ReadIssued { ctx: 1 })
        .push(0, RaftEvent::ReadReady { ctx: 1, index: 2 });
    assert_eq!(h.violated(&logs), vec![]);
}
