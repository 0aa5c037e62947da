//! A whole system of one family: its settings, the workload and where the protected resource
//! lives ([`SystemSpec`]); its layout (every node, named, with its role, in node-id order);
//! building and running its world; and the checker's history of a finished run.
//!
//! [`System`] is the same behind a trait object: a scenario holds one, chosen by its
//! `model.kind` once when it is loaded, and every run goes through it, so everything above
//! knows no family and every handler below is the family's own, monomorphized.

use std::collections::BTreeSet;
use std::fmt::Debug;

use lockstep_check::{Event, Fault as HistFault, FaultKind, History, NodeId as HistNode, OpId};
use lockstep_sim::{
    AppliedFault, Clocks, Dur, Fault, NodeId, Outcome, Record, TraceEntry, Unfired, World,
    WorldConfig,
};

use crate::family::{Counter, Family, MarkSite, ResourceOf, Role, Tokens};
use crate::node::Node;
use crate::observe::{ACQUIRE_REQUESTS, ACQUISITIONS, Observation};
use crate::storage::{Storage, StorageMode};
use crate::workload::{Client, Place, WorkloadConfig};

/// Where the protected resource lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource<R> {
    /// In a storage node of its own, in this mode.
    Storage(StorageMode),
    /// In the lock service itself, kept as `R` (the family's `LockClient::Resource`).
    Service(R),
}

/// A whole system of family `F`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemSpec<F: Family> {
    /// The family's settings.
    pub family: F,
    /// Number of workload clients.
    pub clients: u32,
    /// Their workload.
    pub workload: WorkloadConfig,
    /// Where the protected resource lives.
    pub resource: Resource<ResourceOf<F>>,
}

/// The name of the `i`-th client (from 1).
pub fn client_name(i: u32) -> String {
    format!("client-{i}")
}

/// The storage node's name.
pub const STORAGE: &str = "storage";

/// The marks every workload client reaches: `granted`, `validity-checked` (before its write;
/// the K1 window; only with `check_validity_before_write`), `read-done` and `work-done`.
pub const WORKLOAD_MARKS: &[(&str, MarkSite)] = &[
    ("granted", MarkSite::Client),
    ("validity-checked", MarkSite::Client),
    ("read-done", MarkSite::Client),
    ("work-done", MarkSite::Client),
];

/// The workload's mark right after its validity check, which it reaches only with
/// `check_validity_before_write`.
pub const VALIDITY_CHECKED: &str = "validity-checked";

/// Every node of a system, in node-id order: the family's service nodes, then the storage
/// (unless the service keeps the resource), then `client-1`, `client-2`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Names and roles, by node id.
    pub nodes: Vec<(String, Role)>,
    /// The family's own node groups, by name, with or without nodes.
    pub groups: Vec<&'static str>,
}

impl Layout {
    /// The node names, by node id.
    pub fn names(&self) -> Vec<String> {
        self.nodes.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The nodes with a role that `keep` accepts, in id order.
    pub fn with(&self, keep: impl Fn(Role) -> bool) -> Vec<NodeId> {
        (0..self.nodes.len() as u32)
            .map(NodeId)
            .filter(|n| keep(self.nodes[n.index()].1))
            .collect()
    }

    /// The named node groups a scenario may use besides node names: `servers`, `clients`,
    /// each coordinator group (`sentinels`) and `all`.
    pub fn groups(&self) -> Vec<(&'static str, Vec<NodeId>)> {
        let mut groups = vec![
            ("clients", self.with(|r| r == Role::Client)),
            ("servers", self.with(|r| r == Role::Server)),
        ];
        for &group in &self.groups {
            groups.push((group, self.with(|r| r == Role::Coordinator { group })));
        }
        groups.push(("all", self.with(|_| true)));
        groups
    }
}

/// The herd counters a run keeps when its scenario sets `[workload] acquire`: acquisitions,
/// and the requests the lock clients sent for them, per acquisition.
pub const HERD_COUNTERS: [Counter; 2] = [
    Counter {
        name: ACQUISITIONS,
        per: None,
    },
    Counter {
        name: ACQUIRE_REQUESTS,
        per: Some(ACQUISITIONS),
    },
];

impl<F: Family> SystemSpec<F> {
    /// The counters a run keeps: the family's, then [`HERD_COUNTERS`] when the scenario sets
    /// `[workload] acquire` and the family's clients count their requests.
    fn counter_defs(&self) -> Vec<Counter> {
        let mut defs = self.family.counters().to_vec();
        if self.workload.count_herd {
            defs.extend(HERD_COUNTERS);
        }
        defs
    }

    /// Its layout.
    pub fn layout(&self) -> Layout {
        let mut nodes = self.family.layout();
        if let Resource::Storage(_) = self.resource {
            nodes.push((STORAGE.to_string(), Role::Storage));
        }
        nodes.extend((1..=self.clients).map(|i| (client_name(i), Role::Client)));
        Layout {
            nodes,
            groups: self.family.groups().to_vec(),
        }
    }

    /// Its nodes, in node-id order.
    pub fn build(&self) -> Vec<Node<F>> {
        let service = match &self.resource {
            Resource::Service(r) => Some(r),
            Resource::Storage(_) => None,
        };
        let (servers, lock) = self.family.build(service);
        let mut nodes: Vec<Node<F>> = servers.into_iter().map(Node::Service).collect();
        let place = match self.resource {
            Resource::Storage(mode) => {
                let id = NodeId(nodes.len() as u32);
                nodes.push(Node::Storage(Storage::new(mode)));
                Place::Node(id)
            }
            Resource::Service(r) => Place::Service(r),
        };
        let claim = self.resource == Resource::Storage(StorageMode::CasToken);
        for index in 1..=self.clients {
            let mut client = Client::new(self.workload.clone(), lock.clone(), place)
                .claiming(claim)
                .with_own(self.workload.client(index));
            if let Some(rw) = self.workload.read_write() {
                client = client.accessing(rw.access_of(index));
            }
            nodes.push(Node::Client(client));
        }
        nodes
    }

    /// Every mark its nodes reach: the workload's (without `validity-checked` when the clients
    /// skip the check), then the family's.
    pub fn marks(&self) -> Vec<(&'static str, MarkSite)> {
        let mut v = WORKLOAD_MARKS.to_vec();
        if !self.workload.check_validity_before_write {
            v.retain(|&(m, _)| m != VALIDITY_CHECKED);
        }
        v.extend_from_slice(self.family.marks());
        v
    }
}

/// A count a run of a family gave ([`Counter`] with its value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterValue {
    /// What is counted.
    pub name: &'static str,
    /// The count.
    pub value: u64,
    /// The counter this one is shown per, if any.
    pub per: Option<&'static str>,
}

/// The family's counters of a run, summed from its nodes' observations, in the family's order.
pub fn counters(defs: &[Counter], observations: &[Record<Observation>]) -> Vec<CounterValue> {
    defs.iter()
        .map(|c| CounterValue {
            name: c.name,
            value: observations
                .iter()
                .filter(|o| o.event == Observation::Count(c.name))
                .count() as u64,
            per: c.per,
        })
        .collect()
}

/// A lock system named for people: its family, the family with its key settings, and where
/// the resource lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemLabel {
    /// The family's `kind`: `redis`.
    pub family: &'static str,
    /// The family and its key settings, e.g. `redlock redsync ×5, ttl 10s`.
    pub system: String,
    /// The storage mode as in scenario files (`unfenced`, `fenced-writes`, `fenced-all`,
    /// `cas-token`), or the family's name for a resource its service keeps.
    pub storage: String,
}

/// Everything a finished run left that is worth keeping: the judged history's material and
/// what reports draw beside it.
#[derive(Debug)]
pub struct Ran {
    /// How the run ended.
    pub outcome: Outcome,
    /// The checker's history.
    pub history: History,
    /// The nodes' observations, in order.
    pub observations: Vec<Record<Observation>>,
    /// The family's counters.
    pub counters: Vec<CounterValue>,
    /// The faults the world applied, in order.
    pub fault_log: Vec<AppliedFault>,
    /// The faults scheduled on a mark that never fired, in schedule order.
    pub unfired: Vec<Unfired>,
    /// Each node's clocks before the run started, in node order.
    pub initial_clocks: Vec<Clocks>,
    /// Each node's clocks at the end, in node order.
    pub final_clocks: Vec<Clocks>,
    /// The trace hash.
    pub trace_hash: u64,
    /// Events handled.
    pub events: u64,
    /// The readable trace, when asked for.
    pub trace: Option<Vec<TraceEntry>>,
}

/// A system of any family: what a scenario holds.
pub trait System: Debug + Send + Sync {
    /// The family's `kind`.
    fn kind(&self) -> &'static str;
    /// The family's name in sentences.
    fn family_name(&self) -> &'static str;
    /// Every node, named, with its role.
    fn layout(&self) -> Layout;
    /// Every mark its nodes reach.
    fn marks(&self) -> Vec<(&'static str, MarkSite)>;
    /// The roles its nodes play at run time, which a fault may aim at: the family's
    /// ([`Family::played`]) and the clients' [`crate::family::played::HOLDER`].
    fn played(&self) -> Vec<&'static str>;
    /// The tokens its clients send.
    fn tokens(&self) -> Tokens;
    /// How long a grant lasts without renewal ([`Family::ttl`]).
    fn ttl(&self) -> Dur;
    /// The nodes whose wall clocks time its grants out ([`Family::expiry_wall_clocks`]), in
    /// id order.
    fn expiry_wall_clocks(&self) -> Vec<NodeId>;
    /// The label reports give it.
    fn describe(&self) -> SystemLabel;
    /// Runs a world of it under `config` (whose nodes are [`System::layout`]'s).
    fn run(&self, config: WorldConfig) -> Ran;
    /// What its clients run ([`WorkloadConfig::is_leader`]: their critical sections are
    /// leadership terms).
    fn workload(&self) -> &WorkloadConfig;
}

impl<F: Family> System for SystemSpec<F> {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn family_name(&self) -> &'static str {
        F::NAME
    }

    fn layout(&self) -> Layout {
        SystemSpec::layout(self)
    }

    fn marks(&self) -> Vec<(&'static str, MarkSite)> {
        SystemSpec::marks(self)
    }

    fn played(&self) -> Vec<&'static str> {
        let mut roles = self.family.played().to_vec();
        roles.push(crate::family::played::HOLDER);
        roles
    }

    fn tokens(&self) -> Tokens {
        self.family.tokens()
    }

    fn ttl(&self) -> Dur {
        self.family.ttl()
    }

    fn workload(&self) -> &WorkloadConfig {
        &self.workload
    }

    fn expiry_wall_clocks(&self) -> Vec<NodeId> {
        let roles = self.family.expiry_wall_clocks();
        self.layout().with(|r| roles.contains(&r))
    }

    fn describe(&self) -> SystemLabel {
        let mut parts = self.family.describe();
        if self.clients != 2 {
            let s = if self.clients == 1 { "" } else { "s" };
            parts.push(format!("{} client{s}", self.clients));
        }
        if let Some(keys) = self.workload.keys() {
            parts.push(keys.describe());
        }
        if self.workload.reenter {
            let how = self.family.reentry().unwrap_or("not re-entrant");
            parts.push(format!("taken again inside: {how}"));
        }
        let first = parts.remove(0);
        let system = if parts.is_empty() {
            first
        } else {
            format!("{first}, {}", parts.join(", "))
        };
        let storage = match &self.resource {
            Resource::Storage(mode) => mode.name().to_string(),
            Resource::Service(r) => F::describe_resource(r),
        };
        SystemLabel {
            family: F::KIND,
            system,
            storage,
        }
    }

    fn run(&self, config: WorldConfig) -> Ran {
        let mut world = World::new(config, self.build());
        let initial_clocks = clocks(&world);
        let outcome = world.run();
        let history = history(&world, outcome);
        let observations = world.take_observations();
        // Taken, not copied: the memory budget counts one of each.
        Ran {
            outcome,
            history,
            counters: counters(&self.counter_defs(), &observations),
            observations,
            fault_log: world.take_fault_log(),
            unfired: world.unfired(),
            initial_clocks,
            final_clocks: clocks(&world),
            trace_hash: world.trace_hash(),
            events: world.events(),
            trace: world.take_trace(),
        }
    }
}

fn clocks<F: Family>(world: &World<Node<F>>) -> Vec<Clocks> {
    (0..world.names().len() as u32)
        .map(|i| world.clocks(NodeId(i)).clone())
        .collect()
}

/// The checker's history of a finished run: the nodes' records with the applied faults placed
/// exactly where they happened among them.
///
/// A replicated service records a write to a resource it keeps on every replica as each
/// applies it; the first of those records is the moment the write took effect, and only it is
/// kept (a replica takes each operation once, so one operation is one log entry). Likewise
/// every replica records `Issued` as it applies the change that made a client the owner: only
/// the first of each (client, ticket) is kept, the instant the service issued it.
pub fn history<F: Family>(world: &World<Node<F>>, outcome: Outcome) -> History {
    let mut h = History {
        entries: Vec::with_capacity(world.history().len() + world.fault_log().len()),
        names: world.names().to_vec(),
        end_ns: world.now().as_nanos(),
        complete: outcome == Outcome::Completed,
    };
    let mut faults = world.fault_log().iter().peekable();
    let mut applied = OpSet::default();
    let mut issued = Tickets::default();
    for (i, record) in world.history().iter().enumerate() {
        while let Some(f) = faults.next_if(|f| f.records_before <= i) {
            h.push(f.time.as_nanos(), fault_event(f));
        }
        match (&record.event, world.process(record.node)) {
            (Event::Storage(op), Node::Service(_)) if !applied.insert(op.op) => continue,
            (Event::Issued { client, ticket }, _) if !issued.insert(*client, *ticket) => {
                continue;
            }
            _ => {}
        }
        h.push(record.time.as_nanos(), record.event.clone());
    }
    for f in faults {
        h.push(f.time.as_nanos(), fault_event(f));
    }
    h
}

/// The storage operations seen so far: a bit per (client, sequence number). Sequence numbers
/// count from 1 per client, so the bits are dense; a tree of every operation of a run cost
/// more than the rest of the history's walk.
#[derive(Default)]
struct OpSet {
    bits: Vec<Vec<u64>>,
}

impl OpSet {
    /// Adds `op`; false if it was there already.
    fn insert(&mut self, op: OpId) -> bool {
        let client = op.client.0 as usize;
        if self.bits.len() <= client {
            self.bits.resize_with(client + 1, Vec::new);
        }
        let words = &mut self.bits[client];
        let (word, bit) = (op.seq as usize / 64, op.seq % 64);
        if words.len() <= word {
            words.resize(word + 1, 0);
        }
        let was = words[word] & (1 << bit) != 0;
        words[word] |= 1 << bit;
        !was
    }
}

/// The tickets issued so far, by client. Every replica (every Redlock instance) records the
/// same `Issued` in turn, so most repeats are of the client's latest ticket: those are told
/// by one comparison, before the set is asked.
#[derive(Default)]
struct Tickets {
    latest: Vec<Option<u64>>,
    all: BTreeSet<(HistNode, u64)>,
}

impl Tickets {
    /// Adds `client`'s `ticket`; false if it was there already.
    fn insert(&mut self, client: HistNode, ticket: u64) -> bool {
        let i = client.0 as usize;
        if self.latest.len() <= i {
            self.latest.resize(i + 1, None);
        }
        if self.latest[i] == Some(ticket) {
            return false;
        }
        self.latest[i] = Some(ticket);
        self.all.insert((client, ticket))
    }
}

fn fault_event(f: &AppliedFault) -> Event {
    let kind = match f.fault {
        // A frozen host's process is paused as well: the detail says which it was.
        Fault::Pause { .. } | Fault::Freeze { .. } => FaultKind::Pause,
        Fault::Resume { .. } => FaultKind::Resume,
        Fault::Crash { .. } => FaultKind::Crash,
        Fault::Terminate { .. } => FaultKind::Terminate,
        Fault::Restart { .. } => FaultKind::Restart,
        Fault::Partition { .. } => FaultKind::Partition,
        Fault::Heal => FaultKind::Heal,
        // A strobe is a run of wall clock steps; its start and end are logged, its steps are
        // in the trace.
        Fault::ClockStep { .. } | Fault::ClockStrobe { .. } => FaultKind::ClockStep,
        Fault::ClockSlew { .. } => FaultKind::ClockSlew,
        Fault::ClockDrift { .. } => FaultKind::ClockDrift,
        Fault::Delay { .. } | Fault::Degrade { .. } => FaultKind::Network,
    };
    let nodes = f.nodes.iter().map(|n| HistNode(n.0)).collect();
    Event::Fault(HistFault {
        kind,
        nodes,
        detail: f.detail.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_set_agrees_with_a_tree() {
        let mut rng = lockstep_sim::Rng::fork(7, "op-set");
        let (mut dense, mut tree) = (OpSet::default(), BTreeSet::new());
        for _ in 0..20_000 {
            let op = OpId {
                client: HistNode(rng.below(9) as u32 * 3),
                seq: 1 + rng.below(700) as u32,
            };
            assert_eq!(dense.insert(op), tree.insert(op), "{op:?}");
        }
    }

    #[test]
    fn tickets_agree_with_a_tree() {
        let mut rng = lockstep_sim::Rng::fork(8, "tickets");
        let (mut tickets, mut tree) = (Tickets::default(), BTreeSet::new());
        for _ in 0..20_000 {
            let (client, ticket) = (HistNode(rng.below(5) as u32 * 2), rng.below(400));
            assert_eq!(
                tickets.insert(client, ticket),
                tree.insert((client, ticket)),
                "{client:?} {ticket}"
            );
        }
    }
}
