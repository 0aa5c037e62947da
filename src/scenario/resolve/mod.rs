//! From the file as written to a runnable [`Scenario`]: every value checked, every node name
//! resolved, every problem collected with its key path.

mod chaos;
mod expect;
mod faults;
mod network;
mod seeds;
mod sequence;
mod sweep;
mod system;

pub(crate) use faults::closest;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockstep_models::family::{MarkSite, Role};
use lockstep_models::keys::{Check, MAX_EVENTS, Problems, out_of_range};
use lockstep_models::system::{Layout, System};
use lockstep_sim::{Dur, NodeId, ScheduledFault, Watchdog};

use self::chaos::chaos;
use self::expect::{check_options, expect};
use self::faults::{Bounds, fault};
use self::network::{clocks, network};
use self::seeds::seeds;
use self::sequence::sequence;
pub(crate) use self::sequence::{Others, Pointless, pointless};
use self::sweep::sweep;
pub(crate) use self::system::workload;
use super::Scenario;
use super::schema::{File, Names};

/// The largest `scenario.memory_budget_mb`: a terabyte.
const MAX_MEMORY_MB: u64 = 1 << 20;

/// The checks of values (through `Deref` to [`Check`]) and the resolution of node names.
pub(crate) struct Resolver {
    pub(crate) check: Check,
    names: Vec<String>,
    /// The node groups a file may name (`clients`, `servers`, the family's own, `all`).
    groups: Vec<(&'static str, Vec<NodeId>)>,
    /// Each node's role, by node id.
    roles: Vec<Role>,
    /// The marks the system's nodes reach, and where.
    marks: Vec<(&'static str, MarkSite)>,
    /// The family's name in sentences.
    family: &'static str,
    /// The roles its nodes play at run time, at which a fault may be aimed.
    played: Vec<&'static str>,
}

/// Whom a fault on one node hits.
pub(super) enum Aim {
    /// These nodes, the same fault on each (a name, a list or a group).
    Nodes(Vec<NodeId>),
    /// Whichever node plays the role when the fault comes due.
    Role(&'static str),
}

impl Resolver {
    /// The nodes, or the role, a fault's `node` key names at `path`: node names or groups
    /// (the fault applies to each), or one role the family's nodes play at run time when
    /// `role` allows it.
    fn aim(&mut self, path: &str, names: &Names, role: bool) -> Option<Aim> {
        let is_role = |n: &str| lockstep_models::family::played::ALL.contains(&n);
        if let [name] = names.0.as_slice()
            && is_role(name)
        {
            let known = self.played.iter().find(|&&r| r == name.as_str()).copied();
            let problem = match known {
                Some(r) if role => return Some(Aim::Role(r)),
                Some(_) => format!(
                    "`{name}` is a role, resolved to a node when the fault comes due; this \
                     fault needs nodes by name (a down node plays no role)"
                ),
                None => format!(
                    "no node of {} is ever the {name}: its nodes play {}",
                    self.family,
                    self.played.join(", ")
                ),
            };
            self.problems.push(path, problem);
            return None;
        }
        if let Some((i, name)) = names.0.iter().enumerate().find(|(_, n)| is_role(n)) {
            self.problems.push(
                format!("{path}[{i}]"),
                format!(
                    "`{name}` is a role, resolved to one node when the fault comes due: give \
                     it alone (node = \"{name}\"), not in a list"
                ),
            );
            return None;
        }
        let nodes = self.nodes(path, names);
        (!nodes.is_empty()).then_some(Aim::Nodes(nodes))
    }

    fn node(&mut self, path: &str, name: &str) -> Option<NodeId> {
        match self.names.iter().position(|n| n == name) {
            Some(i) => Some(NodeId(i as u32)),
            None => {
                let known = self.names.join(", ");
                self.problems
                    .push(path, format!("no node named `{name}` (nodes: {known})"));
                None
            }
        }
    }

    /// Node names or the layout's groups (`clients`, `servers`, the family's own such as
    /// `sentinels`, `all`), without duplicates.
    fn nodes(&mut self, path: &str, names: &Names) -> Vec<NodeId> {
        let mut out = Vec::new();
        if names.0.is_empty() {
            self.problems.push(path, "names no node");
        }
        for (i, name) in names.0.iter().enumerate() {
            let p = if names.0.len() == 1 {
                path.to_string()
            } else {
                format!("{path}[{i}]")
            };
            match self.groups.iter().find(|(g, _)| g == name) {
                Some((_, group)) => out.extend(group.iter().copied()),
                None => out.extend(self.node(&p, name)),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

impl Deref for Resolver {
    type Target = Check;

    fn deref(&self) -> &Check {
        &self.check
    }
}

impl DerefMut for Resolver {
    fn deref_mut(&mut self) -> &mut Check {
        &mut self.check
    }
}

/// Checks a parsed file of any family and builds the scenario, or returns every problem
/// found; `system` checks the family's keys, the workload and the storage (its problems
/// come after the `[scenario]` section's, as the keys are read) and builds the system.
pub(crate) fn resolve<M>(
    file: &File<M>,
    system: impl FnOnce(&mut Resolver) -> Arc<dyn System>,
) -> Result<Scenario, Problems> {
    let mut r = Resolver {
        check: Check::default(),
        names: Vec::new(),
        groups: Vec::new(),
        roles: Vec::new(),
        marks: Vec::new(),
        family: "",
        played: Vec::new(),
    };
    let s = &file.scenario;
    if s.name.trim().is_empty() {
        r.problems.push("scenario.name", "must not be empty");
    }
    let duration = r.positive_ms("scenario.duration_ms", s.duration_ms);
    if s.max_events == 0 {
        r.problems.push(
            "scenario.max_events",
            format!("must be greater than 0 (at most {MAX_EVENTS})"),
        );
    } else if s.max_events > MAX_EVENTS {
        r.problems.push(
            "scenario.max_events",
            out_of_range(s.max_events, 1, MAX_EVENTS),
        );
    }
    let memory_budget_mb = r.count(
        "scenario.memory_budget_mb",
        s.memory_budget_mb,
        1,
        MAX_MEMORY_MB,
    );
    let memory_budget = memory_budget_mb * (1 << 20);
    let wall_budget = r.positive_ms("scenario.wall_budget_ms", s.wall_budget_ms);
    // A chaos profile stops drawing where the run could no longer reach its faults (each
    // costs at least an event) or would be over its memory budget before its first event.
    let max_faults = s
        .max_events
        .min(memory_budget / lockstep_sim::world::memory::FAULT + 1);
    let seeds = seeds(&mut r, s.seeds.as_ref(), s.seed);
    let system = system(&mut r);
    let layout: Layout = system.layout();
    r.names = layout.names();
    r.groups = layout.groups();
    r.roles = layout.nodes.iter().map(|&(_, role)| role).collect();
    r.marks = system.marks();
    r.family = system.family_name();
    r.played = system.played();
    for (i, own) in system.workload().per_client.iter().enumerate() {
        if own.start > Dur::ZERO && own.start >= duration {
            r.problems.push(
                format!("workload.per_client.client-{}.start_ms", i + 1),
                format!(
                    "{} ms is not before the end of the run (scenario.duration_ms = {})",
                    own.start.as_millis(),
                    duration.as_millis()
                ),
            );
        }
    }
    let (link, links) = network(&mut r, &file.network);
    let tcp = network::tcp(&mut r, &file.network);
    let mut clocks = clocks(&mut r, &file.clock);
    if let Some(w) = file.workload.watchdog {
        // The supervisor of every client process.
        let watchdog = Watchdog {
            after: r.positive_ms("workload.watchdog.after_ms", w.after_ms),
            restart_after: w
                .restart_after_ms
                .map(|v| r.ms("workload.watchdog.restart_after_ms", v)),
        };
        for (config, role) in clocks.iter_mut().zip(&r.roles) {
            if *role == Role::Client {
                config.watchdog = Some(watchdog);
            }
        }
    }
    let bounds = Bounds {
        duration,
        max_events: s.max_events,
    };
    // A `[[fault]]` on a group is one fault per node: each knows the entry it came from.
    let mut placed: Vec<(usize, ScheduledFault)> = Vec::new();
    let mut optional = Vec::new();
    for (i, f) in file.fault.iter().enumerate() {
        for sf in fault(&mut r, &format!("fault[{i}]"), f, bounds) {
            placed.push((i, sf));
            optional.push(f.on.as_ref().is_some_and(|on| on.optional));
        }
    }
    let others = Others {
        chaos: file.chaos.is_some(),
        watchdog: file.workload.watchdog.is_some(),
    };
    sequence(&mut r, &placed, others);
    let (origin, faults): (Vec<usize>, Vec<ScheduledFault>) = placed.into_iter().unzip();
    let chaos = file
        .chaos
        .as_ref()
        .and_then(|c| chaos(&mut r, c, duration, &*system, &layout, max_faults));
    let mut expect = expect(&mut r, &file.expect);
    match (&chaos, file.expect.recovers) {
        (Some(c), None | Some(true)) => expect.recovery = Some(c.liveness),
        (None, Some(true)) => r.problems.push(
            "expect.recovers",
            "needs a [chaos] section: recovery is measured from the start of its quiet tail",
        ),
        _ => {}
    }
    let sweep = file.sweep.as_ref().and_then(|w| sweep(&mut r, w, s.seed));
    if !r.problems.is_empty() {
        return Err(r.check.problems);
    }
    Ok(Scenario {
        name: s.name.clone(),
        description: s.description.clone(),
        duration,
        seed: s.seed,
        seeds,
        max_events: s.max_events,
        memory_budget,
        wall_budget,
        check_options: check_options(
            &*system,
            chaos.as_ref().map(|c| c.quiet_from.as_nanos()),
            chaos.as_ref().map(|c| c.start.as_nanos()),
            &expect,
        ),
        system,
        clocks,
        link,
        links,
        tcp,
        faults,
        origin,
        optional,
        chaos,
        expect,
        sweep,
    })
}
