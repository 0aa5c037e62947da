//! From the file as written to a runnable [`Scenario`]: every value checked, every node name
//! resolved, every problem collected with its key path.

mod chaos;
mod expect;
mod faults;
mod network;
mod seeds;
mod sweep;
mod system;

use std::ops::{Deref, DerefMut};

use lockstep_check::Options;
use lockstep_models::keys::{Check, Problems};
use lockstep_sim::{NodeId, ScheduledFault};

use self::chaos::chaos;
use self::expect::expect;
use self::faults::fault;
use self::network::{clocks, network};
use self::seeds::seeds;
use self::sweep::sweep;
use self::system::system_spec;
use super::Scenario;
use super::schema::{File, Names};

/// The checks of values (through `Deref` to [`Check`]) and the resolution of node names.
struct Resolver {
    check: Check,
    names: Vec<String>,
    clients: Vec<NodeId>,
    servers: Vec<NodeId>,
    sentinels: Vec<NodeId>,
}

impl Resolver {
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

    /// Node names or the groups `clients`, `servers`, `sentinels`, `all`, without duplicates.
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
            match name.as_str() {
                "clients" => out.extend(self.clients.iter().copied()),
                "servers" => out.extend(self.servers.iter().copied()),
                "sentinels" => out.extend(self.sentinels.iter().copied()),
                "all" => out.extend((0..self.names.len() as u32).map(NodeId)),
                _ => out.extend(self.node(&p, name)),
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

/// Checks a parsed file and builds the scenario, or returns every problem found.
pub(crate) fn resolve(file: &File) -> Result<Scenario, Problems> {
    let mut r = Resolver {
        check: Check::default(),
        names: Vec::new(),
        clients: Vec::new(),
        servers: Vec::new(),
        sentinels: Vec::new(),
    };
    let s = &file.scenario;
    if s.name.trim().is_empty() {
        r.problems.push("scenario.name", "must not be empty");
    }
    let duration = r.positive_ms("scenario.duration_ms", s.duration_ms);
    if s.max_events == 0 {
        r.problems
            .push("scenario.max_events", "must be greater than 0");
    }
    let seeds = seeds(&mut r, s.seeds.as_ref(), s.seed);
    let system = system_spec(&mut r, file);
    let nodes = lockstep_models::system::build(&system);
    r.names = nodes.iter().map(|(name, _)| name.clone()).collect();
    r.clients = (0..r.names.len() as u32)
        .map(NodeId)
        .filter(|n| r.names[n.index()].starts_with("client-"))
        .collect();
    let servers = lockstep_models::system::server_count(&system.family) as u32;
    let sentinels = lockstep_models::system::sentinel_count(&system.family) as u32;
    r.servers = (0..servers).map(NodeId).collect();
    r.sentinels = (servers..servers + sentinels).map(NodeId).collect();
    let (link, links) = network(&mut r, &file.network);
    let clocks = clocks(&mut r, &file.clock);
    let faults: Vec<ScheduledFault> = file
        .fault
        .iter()
        .enumerate()
        .filter_map(|(i, f)| fault(&mut r, &format!("fault[{i}]"), f, duration))
        .collect();
    let chaos = file
        .chaos
        .as_ref()
        .and_then(|c| chaos(&mut r, c, file.model.ttl_ms, duration, &system));
    let mut expect = expect(&file.expect);
    match (&chaos, file.expect.recovers) {
        (Some(c), None | Some(true)) => expect.recovery = Some(c.liveness),
        (None, Some(true)) => r.problems.push(
            "expect.recovers",
            "needs a [chaos] section: recovery is measured from the start of its quiet tail",
        ),
        _ => {}
    }
    let sweep = file.sweep.as_ref().and_then(|s| sweep(&mut r, s));
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
        check_options: Options {
            tokens_monotonic: lockstep_models::system::tokens_monotonic(&system.family),
            quiet_from_ns: chaos.as_ref().map(|c| c.quiet_from.as_nanos()),
            ..Options::default()
        },
        system,
        clocks,
        link,
        links,
        faults,
        chaos,
        expect,
        sweep,
    })
}
