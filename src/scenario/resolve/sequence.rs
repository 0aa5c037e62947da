//! Faults that the file's own earlier faults make meaningless: a restart of a node told to
//! stop for good (`terminate`), and a resume of a node that no pause holds then. Only faults
//! at a time are judged, and only when nothing else could change the node's state in between:
//! a fault on a mark may fire at any time, one aimed at a role may hit any node, and a chaos profile or a client watchdog may crash
//! or pause a node whenever its schedule says. The loader refuses them with both faults named;
//! `lockstep hunt` leaves them out of the file it writes ([`pointless`]).

use lockstep_models::family::Role;
use lockstep_sim::{Fault, NodeId, ScheduledFault, Time, When};

use super::Resolver;

/// What besides a schedule's faults may change a node's state during a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Others {
    /// A `[chaos]` profile draws faults on the run's nodes.
    pub(crate) chaos: bool,
    /// `[workload] watchdog` kills a client that stays paused.
    pub(crate) watchdog: bool,
}

/// A fault at a time: where it comes in the run (its time, then its place in the schedule, as
/// the world applies faults of one instant in the order given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct At {
    /// When it applies.
    pub(crate) time: Time,
    /// Its place in the schedule, from 0.
    pub(crate) index: usize,
}

/// Why a fault can never do what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pointless {
    /// A `restart` after the node was told to stop for good at `told`.
    Restart {
        /// The terminate.
        told: At,
    },
    /// A `crash` with `restart_after` after the node was told to stop for good at `told`.
    CrashRestart {
        /// The terminate.
        told: At,
    },
    /// A `resume` when no pause holds the node: none before it (`None`), or the last one
    /// given, at `.0`, is over at `.1`.
    Resume {
        /// The pause that ends last before the resume, and its end.
        last: Option<(At, Time)>,
    },
}

/// A meaningless fault of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The fault.
    pub(crate) at: At,
    /// Its node.
    pub(crate) node: NodeId,
    /// Why.
    pub(crate) why: Pointless,
}

/// The faults of `faults` (each with its place) that can never do what they say, by the
/// rules above; `roles` are the nodes' roles by id.
pub(crate) fn pointless(
    faults: &[(usize, ScheduledFault)],
    roles: &[Role],
    others: Others,
) -> Vec<Finding> {
    if others.chaos {
        return Vec::new();
    }
    // A fault aimed at a role hits a node known only when it comes due: it is judged with
    // the faults on a mark (it may hit any node), never as one on the node it names.
    let timed: Vec<(At, &Fault)> = faults
        .iter()
        .filter(|(_, f)| f.role.is_none())
        .filter_map(|(index, f)| match f.when {
            When::At(time) => Some((
                At {
                    time,
                    index: *index,
                },
                &f.fault,
            )),
            When::OnMark { .. } => None,
        })
        .collect();
    let s = Seen {
        faults,
        timed: &timed,
        roles,
        others,
    };
    let mut out = Vec::new();
    for &(at, fault) in &timed {
        let (node, why) = match *fault {
            Fault::Restart { node } => (
                node,
                s.terminated(node, at)
                    .map(|told| Pointless::Restart { told }),
            ),
            Fault::Crash {
                node,
                restart_after: Some(_),
            } => (
                node,
                s.terminated(node, at)
                    .map(|told| Pointless::CrashRestart { told }),
            ),
            Fault::Resume { node } => (
                node,
                s.unpaused(node, at).map(|last| Pointless::Resume { last }),
            ),
            _ => continue,
        };
        if let Some(why) = why {
            out.push(Finding { at, node, why });
        }
    }
    out
}

/// A schedule's faults, as the rules read them.
struct Seen<'a> {
    faults: &'a [(usize, ScheduledFault)],
    timed: &'a [(At, &'a Fault)],
    roles: &'a [Role],
    others: Others,
}

impl Seen<'_> {
    /// Whether a fault that `kind` accepts may hit `node` at a time not known before the run:
    /// one on a mark that names it, or one aimed at a role (any node may play it).
    fn on_mark(&self, node: NodeId, kind: fn(&Fault) -> bool) -> bool {
        self.faults.iter().any(|(_, f)| {
            kind(&f.fault)
                && (f.role.is_some()
                    || (matches!(f.when, When::OnMark { .. }) && f.fault.nodes().contains(&node)))
        })
    }

    /// The first terminate of `node` before `at` that finds it up or paused for certain, so
    /// that it stops it for good (one that may find it down already does nothing).
    fn terminated(&self, node: NodeId, at: At) -> Option<At> {
        // A crash or terminate on a mark may come before any time, and a watchdog kills a
        // client that a pause holds long enough.
        let watchdog = self.others.watchdog && self.roles.get(node.index()) == Some(&Role::Client);
        if self.on_mark(node, kills) || (watchdog && self.on_mark(node, is_pause)) {
            return None;
        }
        let may_be_down = |t0: At| {
            self.timed.iter().any(|&(a, f)| {
                a < t0
                    && match *f {
                        Fault::Crash {
                            node: n,
                            restart_after,
                        } => {
                            n == node
                                && restart_after.is_none_or(|d| a.time.saturating_add(d) >= t0.time)
                        }
                        Fault::Terminate { node: n, .. } => n == node,
                        Fault::Pause { node: n, .. } | Fault::Freeze { node: n, .. } => {
                            watchdog && n == node
                        }
                        _ => false,
                    }
            })
        };
        self.timed
            .iter()
            .find(|&&(a, f)| {
                a < at
                    && matches!(*f, Fault::Terminate { node: n, .. } if n == node)
                    && !may_be_down(a)
            })
            .map(|&(a, _)| a)
    }

    /// `Some` when no pause can hold `node` at `at` (none on a mark, and every pause at a
    /// time before it over by then), with the one that ends last.
    fn unpaused(&self, node: NodeId, at: At) -> Option<Option<(At, Time)>> {
        if self.on_mark(node, is_pause) {
            return None;
        }
        // A pause during a pause lasts until the later of the two ends, so the node is paused
        // exactly while one of them runs (or until a resume or a crash).
        let mut last: Option<(At, Time)> = None;
        for &(a, f) in self.timed {
            match *f {
                Fault::Pause { node: n, duration } | Fault::Freeze { node: n, duration }
                    if n == node && a < at =>
                {
                    // An open pause holds it until a resume.
                    let end = duration.map(|d| a.time.saturating_add(d))?;
                    if end >= at.time {
                        return None;
                    }
                    if last.is_none_or(|(_, e)| end >= e) {
                        last = Some((a, end));
                    }
                }
                _ => {}
            }
        }
        Some(last)
    }
}

fn is_pause(f: &Fault) -> bool {
    matches!(f, Fault::Pause { .. } | Fault::Freeze { .. })
}

fn kills(f: &Fault) -> bool {
    matches!(f, Fault::Crash { .. } | Fault::Terminate { .. })
}

/// `t` in milliseconds, as a scenario file writes it.
fn ms(t: Time) -> String {
    format!("{} ms", t.as_nanos() as f64 / 1e6)
}

/// Refuses each fault of the file that can never do what it says ([`pointless`]), naming the
/// fault that makes it so; `faults` are the file's resolved faults with their places.
pub(super) fn sequence(r: &mut Resolver, faults: &[(usize, ScheduledFault)], others: Others) {
    for Finding { at, node, why } in pointless(faults, &r.roles, others) {
        let name = &r.names[node.index()];
        let (key, problem) = match why {
            Pointless::Restart { told } => (
                "restart",
                format!(
                    "{name} is told to stop for good at {} (fault[{}].terminate), so this \
                     restart at {} can never apply: a terminated node does not come back \
                     (crash it instead for one that does)",
                    ms(told.time),
                    told.index,
                    ms(at.time)
                ),
            ),
            Pointless::CrashRestart { told } => (
                "crash.restart_after_ms",
                format!(
                    "{name} is told to stop for good at {} (fault[{}].terminate), so this \
                     crash at {} can never be followed by a restart: leave restart_after_ms out",
                    ms(told.time),
                    told.index,
                    ms(at.time)
                ),
            ),
            Pointless::Resume { last: None } => (
                "resume",
                format!(
                    "no fault pauses {name} before {}, so this resume does nothing (it runs a \
                     paused node again)",
                    ms(at.time)
                ),
            ),
            Pointless::Resume {
                last: Some((pause, end)),
            } => (
                "resume",
                format!(
                    "{name} is no longer paused at {}: the last pause, fault[{}].pause, ends at \
                     {}, so this resume does nothing (it runs a paused node again)",
                    ms(at.time),
                    pause.index,
                    ms(end)
                ),
            ),
        };
        r.check
            .problems
            .push(format!("fault[{}].{key}", at.index), problem);
    }
}
