//! A timeline as plain data: lanes, what clients held and servers granted, storage
//! operations, faults, overlaps, clock offsets and notes, all in true-time nanoseconds.
//! [`Timeline::from_history`] fills in what the history and the verdict tell; the painter is
//! `svg.rs`.

use lockstep_check::{Event, ExitReason, GrantId, History, OpKind, OpOutcome, Verdict};

/// What a lane's process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneKind {
    /// A lock server (Redis instance, etcd or ZooKeeper member).
    Server,
    /// A coordinator beside the servers (a Redis sentinel).
    Coordinator,
    /// The protected storage.
    Storage,
    /// A workload client.
    Client,
    /// Anything else.
    Other,
}

/// One process's lane, in node order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The process's name.
    pub name: String,
    /// What it is.
    pub kind: LaneKind,
}

/// An interval a client believed it held the lock: from its grant to its exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The client's lane.
    pub lane: usize,
    /// The grant.
    pub grant: GrantId,
    /// The grant's fencing token, if any.
    pub token: Option<u64>,
    /// True time of the grant.
    pub from_ns: u64,
    /// True time of the exit (or of the client's crash, or the end of the run).
    pub to_ns: u64,
    /// Why it ended; `None` when the run ended first.
    pub exit: Option<ExitReason>,
}

/// An interval a server considered the lock granted to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The server's lane.
    pub lane: usize,
    /// The lane of the client it granted the lock to.
    pub holder: usize,
    /// True time the server granted it.
    pub from_ns: u64,
    /// True time it stopped considering it granted (expiry, deletion, crash, end of run).
    pub to_ns: u64,
    /// How it ended, e.g. `expired` or `deleted`.
    pub detail: String,
}

/// A storage operation as storage handled it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// True time storage handled it.
    pub time_ns: u64,
    /// The lane of the client that sent it.
    pub lane: usize,
    /// Read, write or claim.
    pub kind: OpKind,
    /// The grant it was sent under.
    pub grant: GrantId,
    /// The token it carried.
    pub token: Option<u64>,
    /// Accepted or rejected.
    pub outcome: OpOutcome,
    /// An accepted stale op the verdict lists.
    pub stale: bool,
    /// A lost update the verdict lists.
    pub lost_update: bool,
}

/// The kind of a fault on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMark {
    /// Links cut: shaded on the cut-off nodes' lanes until the heal.
    Partition,
    /// A paused process, until it resumes.
    Pause,
    /// A crashed process, until it restarts.
    Crash,
    /// A process told to stop, until it is killed (or crashes otherwise).
    Terminate,
    /// A wall clock step (an instant).
    ClockStep,
    /// A wall clock slew starting (an instant).
    ClockSlew,
    /// A clock drift change (an instant).
    ClockDrift,
    /// A clock strobe, for its duration.
    ClockStrobe,
    /// Extra delay on links, for its duration.
    Delay,
    /// Extra loss and duplication on links, for its duration.
    Degrade,
}

/// A fault on the lanes it affected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpan {
    /// What kind.
    pub kind: FaultMark,
    /// The lanes it is drawn on.
    pub lanes: Vec<usize>,
    /// When it took effect.
    pub from_ns: u64,
    /// When it ended (equal to `from_ns` for an instant).
    pub to_ns: u64,
    /// The world's description of it.
    pub detail: String,
}

/// Two holders at once, as the verdict lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlapSpan {
    /// The earlier grant.
    pub first: GrantId,
    /// The later grant.
    pub second: GrantId,
    /// When the overlap began.
    pub from_ns: u64,
    /// When it ended.
    pub to_ns: u64,
}

/// One reading of a node's clocks, as offsets from true time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockPoint {
    /// True time.
    pub t_ns: u64,
    /// Wall clock minus true time (minus the wall epoch), in ns.
    pub wall_offset_ns: i64,
    /// Monotonic clock minus its reading at time zero minus true time (its drift), in ns.
    pub mono_offset_ns: i64,
}

/// A node's clock offsets: piecewise-linear between points; two points at one time are a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockSeries {
    /// The node's lane.
    pub lane: usize,
    /// The breakpoints, in time order.
    pub points: Vec<ClockPoint>,
}

/// Everything one timeline shows. All times are true time in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The heading (the scenario's name).
    pub title: String,
    /// The line under it (seed, verdict).
    pub subtitle: String,
    /// The end of the run.
    pub end_ns: u64,
    /// One lane per process, in node order.
    pub lanes: Vec<Lane>,
    /// What clients believed they held.
    pub held: Vec<Held>,
    /// What servers granted, where the family's server can tell.
    pub granted: Vec<Granted>,
    /// Storage operations.
    pub ops: Vec<Op>,
    /// The lane on which storage operations are marked besides the client's own.
    pub storage_lane: Option<usize>,
    /// Faults.
    pub faults: Vec<FaultSpan>,
    /// Overlapping holders (the verdict's examples).
    pub overlaps: Vec<OverlapSpan>,
    /// Clock offsets per node.
    pub clocks: Vec<ClockSeries>,
    /// Sentences shown under the drawing (what is approximate, what was left out).
    pub notes: Vec<String>,
}

impl Timeline {
    /// The lanes, held intervals, operations and overlaps of `history` as judged by
    /// `verdict`. Every lane is [`LaneKind::Other`] except the clients (processes with a
    /// request or a grant); faults, clocks and server grants are left empty.
    pub fn from_history(history: &History, verdict: &Verdict) -> Timeline {
        let mut lanes: Vec<Lane> = history
            .names
            .iter()
            .map(|name| Lane {
                name: name.clone(),
                kind: LaneKind::Other,
            })
            .collect();
        let lane_of = |node: lockstep_check::NodeId, lanes: &mut Vec<Lane>| {
            let i = node.0 as usize;
            while lanes.len() <= i {
                let name = history.name(lockstep_check::NodeId(lanes.len() as u32));
                lanes.push(Lane {
                    name,
                    kind: LaneKind::Other,
                });
            }
            i
        };
        let stale: Vec<usize> = verdict
            .stale_accepted
            .examples
            .iter()
            .map(|s| s.entry)
            .collect();
        let lost: Vec<usize> = verdict
            .lost_updates
            .examples
            .iter()
            .map(|l| l.entry)
            .collect();
        let mut held: Vec<Held> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut ops = Vec::new();
        for (i, entry) in history.entries.iter().enumerate() {
            let t = entry.time_ns;
            match &entry.event {
                Event::Request { client }
                | Event::AcquireFailed { client }
                | Event::Claimed { client, .. }
                | Event::Dequeued { client, .. }
                | Event::Done { client, .. }
                | Event::Due { client, .. }
                | Event::Pick { client, .. }
                | Event::Shared { client }
                | Event::Nest { client }
                | Event::Nested { client } => {
                    let l = lane_of(*client, &mut lanes);
                    lanes[l].kind = LaneKind::Client;
                }
                Event::Grant { grant, token, .. } => {
                    let l = lane_of(grant.client, &mut lanes);
                    lanes[l].kind = LaneKind::Client;
                    open.push(held.len());
                    held.push(Held {
                        lane: l,
                        grant: *grant,
                        token: *token,
                        from_ns: t,
                        to_ns: history.end_ns.max(t),
                        exit: None,
                    });
                }
                Event::Exit { grant, why } => {
                    if let Some(pos) = open.iter().position(|&h| held[h].grant == *grant) {
                        let h = open.remove(pos);
                        held[h].to_ns = t;
                        held[h].exit = Some(*why);
                    }
                }
                Event::Fault(f) if f.kind == lockstep_check::FaultKind::Crash => {
                    // The checker ends a client's grant at its crash; so does the picture.
                    open.retain(|&h| {
                        let crashed = f.nodes.iter().any(|n| n.0 as usize == held[h].lane);
                        if crashed {
                            held[h].to_ns = t;
                            held[h].exit = Some(ExitReason::Crashed);
                        }
                        !crashed
                    });
                }
                // What the servers issued is drawn from their own audits (the builder's
                // `granted`), which also know when each ownership ended.
                // (A job queue's jobs are not drawn: its workers' lanes are.)
                Event::Fault(_) | Event::Issued { .. } | Event::Enqueued { .. } => {}
                Event::Storage(op) => {
                    let l = lane_of(op.op.client, &mut lanes);
                    ops.push(Op {
                        time_ns: t,
                        lane: l,
                        kind: op.kind,
                        grant: op.grant,
                        token: op.token,
                        outcome: op.outcome,
                        stale: stale.contains(&i),
                        lost_update: lost.contains(&i),
                    });
                }
            }
        }
        let overlaps = verdict
            .double_holders
            .examples
            .iter()
            .map(|o| OverlapSpan {
                first: o.first,
                second: o.second,
                from_ns: o.from_ns,
                to_ns: o.to_ns,
            })
            .collect();
        let mut notes = Vec::new();
        let more = |what: &str, count: u64, shown: usize| {
            (count > shown as u64).then(|| {
                format!(
                    "{} of {count} {what} highlighted (the verdict's examples).",
                    shown
                )
            })
        };
        notes.extend(more(
            "overlapping pairs",
            verdict.double_holders.pairs,
            verdict.double_holders.examples.len(),
        ));
        notes.extend(more(
            "stale ops accepted",
            verdict.stale_accepted.count,
            stale.len(),
        ));
        notes.extend(more("lost updates", verdict.lost_updates.count, lost.len()));
        Timeline {
            end_ns: history.end_ns,
            lanes,
            held,
            ops,
            overlaps,
            notes,
            ..Timeline::default()
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use lockstep_check::{Entry, NodeId, OpId, StorageOp};

    fn client(n: u32) -> NodeId {
        NodeId(n)
    }

    pub(in crate::timeline) fn history() -> History {
        let g = |c, seq| GrantId {
            client: client(c),
            seq,
        };
        let read = |c, seq, t| Entry {
            time_ns: t,
            event: Event::Storage(StorageOp {
                op: OpId {
                    client: client(c),
                    seq,
                },
                grant: g(c, 1),
                kind: OpKind::Read { value: 0 },
                token: None,
                outcome: OpOutcome::Accepted,
            }),
        };
        let mut entries = vec![
            Entry {
                time_ns: 1_000,
                event: Event::Grant {
                    grant: g(1, 1),
                    token: Some(3),
                    ticket: None,
                },
            },
            Entry {
                time_ns: 2_000,
                event: Event::Grant {
                    grant: g(2, 1),
                    token: None,
                    ticket: None,
                },
            },
        ];
        // Many ops within one pixel of each other.
        for i in 0..50 {
            entries.push(read(2, i + 1, 3_000 + i as u64));
        }
        entries.push(Entry {
            time_ns: 9_000,
            event: Event::Exit {
                grant: g(1, 1),
                why: ExitReason::Released,
            },
        });
        History {
            entries,
            names: vec!["storage".into(), "<c1>".into(), "c&2".into()],
            end_ns: 10_000_000,
            complete: true,
        }
    }

    pub(in crate::timeline) fn verdict(h: &History) -> Verdict {
        lockstep_check::check(h, &lockstep_check::Options::default()).expect("valid history")
    }

    #[test]
    fn from_history_pairs_grants_with_exits_and_runs_to_the_end_otherwise() {
        let h = history();
        let t = Timeline::from_history(&h, &verdict(&h));
        assert_eq!(t.held.len(), 2);
        assert_eq!((t.held[0].from_ns, t.held[0].to_ns), (1_000, 9_000));
        assert_eq!(t.held[0].token, Some(3));
        assert_eq!(t.held[1].to_ns, 10_000_000);
        assert_eq!(t.held[1].exit, None);
        assert_eq!(t.lanes[1].kind, LaneKind::Client);
        assert_eq!(t.lanes[0].kind, LaneKind::Other);
        assert_eq!(t.ops.len(), 50);
    }
}
