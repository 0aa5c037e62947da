//! The grant table: every grant in grant order with its critical section, built in one pass
//! that also validates the history.
//!
//! Every other pass trusts this table: a grant named by an exit or a storage op exists and
//! came earlier, so later passes may look grants up without handling failure.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Event, ExitReason, FaultKind, GrantId, History, NodeId};
use crate::text::{grant_label, op_label};

use super::HistoryError;

/// Why a critical section ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CsEnd {
    /// The grant's first `Exit`.
    Exit(ExitReason),
    /// A crash fault of the holder: a crashed client exits at the crash.
    Crash,
    /// A later grant to the same client: one client acts for one grant at a time.
    Regrant,
    /// Still open when the run ended.
    RunEnd,
}

/// One grant and its critical section `[from_ns, to_ns)`.
#[derive(Clone, Debug)]
pub(super) struct Grant {
    pub(super) id: GrantId,
    /// Index of the `Grant` entry.
    pub(super) entry: usize,
    /// Index of the entry at which the service issued the grant: the first `Issued` of its
    /// ticket, or the `Grant` entry itself when it names none.
    pub(super) issued_entry: usize,
    pub(super) token: Option<u64>,
    /// The lock it is a grant of, and the resource its ops are on (`Event::Pick`).
    pub(super) lock: u64,
    pub(super) resource: u64,
    /// A reader's grant (`Event::Shared`), which shares its lock with other readers.
    pub(super) shared: bool,
    pub(super) from_ns: u64,
    pub(super) to_ns: u64,
    pub(super) end: CsEnd,
    /// Index of the entry that ended the critical section; `None` if the run's end did.
    pub(super) end_entry: Option<usize>,
    /// Whether an `Exit` named the grant: a second one is refused.
    exited: bool,
}

impl Grant {
    /// Whether the critical section was open just before entry `entry` took effect.
    fn open_before(&self, entry: usize) -> bool {
        self.entry < entry && self.end_entry.is_none_or(|end| end >= entry)
    }
}

/// All grants, indexed by grant ordinal (the order of their `Grant` entries, in which clients
/// learned of them), with their service order (the order in which the service issued them).
///
/// Critical sections are the clients' (a client acts from the moment it learns of its grant);
/// which of two grants is the newer is the service's (a grant issued first is the older one,
/// even when its reply reached its client last).
#[derive(Debug)]
pub(super) struct Grants {
    pub(super) list: Vec<Grant>,
    /// Each client's grants: their ordinals in grant order, and by sequence number.
    clients: Clients,
    /// Each grant's place in service order, by ordinal.
    rank: Vec<usize>,
    /// The ordinals in service order.
    service_order: Vec<usize>,
    /// Whether every grant is of one lock, and every one on one resource: the checks then
    /// judge the table as a whole.
    pub(super) one_lock: bool,
    pub(super) one_resource: bool,
    /// Whether some grant is a reader's.
    pub(super) any_shared: bool,
    /// Whether the history has `Due` events (a scheduled job's), so its ticks are judged.
    pub(super) any_due: bool,
}

impl Grants {
    /// Validates `history` and builds its grant table.
    pub(super) fn build(history: &History) -> Result<Grants, HistoryError> {
        let mut grants = Grants {
            list: Vec::new(),
            clients: Clients::default(),
            rank: Vec::new(),
            service_order: Vec::new(),
            one_lock: true,
            one_resource: true,
            any_shared: false,
            any_due: false,
        };
        // The clients whose next request is shared, and those whose open request is.
        let mut shared_next: BTreeSet<NodeId> = BTreeSet::new();
        let mut requested_shared: BTreeSet<NodeId> = BTreeSet::new();
        // Each client's last pick, and the pick its open request is for.
        let mut picked: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
        let mut requested: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
        // The open critical section of each client, by grant ordinal.
        let mut open: BTreeMap<NodeId, usize> = BTreeMap::new();
        // The processes a crash fault named and no restart since: they record nothing.
        let mut crashed: BTreeSet<NodeId> = BTreeSet::new();
        // The clients whose nested acquisition (`Nest`) waits, in their open section.
        let mut nesting: BTreeSet<NodeId> = BTreeSet::new();
        // Every `Issued` as ((client, ticket), entry), sorted: the first of a ticket is found
        // by binary search. (A sorted vector, not a map: this runs once per checked run, on
        // every run of a sweep.)
        let mut issued: Vec<((NodeId, u64), usize)> = history
            .entries
            .iter()
            .enumerate()
            .filter_map(|(index, entry)| match entry.event {
                Event::Issued { client, ticket } => Some(((client, ticket), index)),
                _ => None,
            })
            .collect();
        issued.sort_unstable();
        for (index, entry) in history.entries.iter().enumerate() {
            check_time(history, index)?;
            let time_ns = entry.time_ns;
            if !crashed.is_empty() {
                check_alive(history, index, &crashed)?;
            }
            match &entry.event {
                Event::Grant {
                    grant,
                    token,
                    ticket,
                } => {
                    if let Some(first) = grants.clients.ordinal(*grant) {
                        let message = format!(
                            "grant {} is granted twice (first at entry {})",
                            grant_label(history, *grant),
                            grants.list[first].entry
                        );
                        return Err(HistoryError::at(index, message));
                    }
                    let before = grants.clients.granted(grant.client);
                    if u64::from(grant.seq) != before as u64 + 1 {
                        let message = match before {
                            0 => format!(
                                "grant {} is {}'s first: a client's grants are numbered 1, 2, \
                                 3, ... in the order it learns of them",
                                grant_label(history, *grant),
                                history.name(grant.client)
                            ),
                            _ => format!(
                                "grant {} follows {}: a client's grants are numbered 1, 2, 3, \
                                 ... in the order it learns of them",
                                grant_label(history, *grant),
                                grant_label(
                                    history,
                                    GrantId {
                                        client: grant.client,
                                        seq: before as u32,
                                    }
                                )
                            ),
                        };
                        return Err(HistoryError::at(index, message));
                    }
                    let issued_entry = match ticket {
                        None => index,
                        Some(ticket) => match first_issued(&issued, (grant.client, *ticket)) {
                            Some(at) if at < index => at,
                            _ => {
                                let message = format!(
                                    "grant {} names ticket {ticket}, which no service issued to \
                                     its client before it",
                                    grant_label(history, *grant)
                                );
                                return Err(HistoryError::at(index, message));
                            }
                        },
                    };
                    let ordinal = grants.list.len();
                    if let Some(previous) = open.insert(grant.client, ordinal) {
                        grants.close(previous, time_ns, CsEnd::Regrant, index);
                    }
                    if !nesting.is_empty() {
                        nesting.remove(&grant.client);
                    }
                    let pick = match requested.is_empty() {
                        true => (0, 0),
                        false => requested.remove(&grant.client).unwrap_or((0, 0)),
                    };
                    let shared =
                        !requested_shared.is_empty() && requested_shared.remove(&grant.client);
                    grants.push(history, index, issued_entry, *grant, *token, pick);
                    if shared {
                        grants.any_shared = true;
                        grants.list[ordinal].shared = true;
                    }
                }
                Event::Exit { grant, why } => {
                    let ordinal = grants.known(history, index, *grant, || "exit".to_owned())?;
                    if std::mem::replace(&mut grants.list[ordinal].exited, true) {
                        let message = format!(
                            "grant {} exits twice: a client stops acting for a grant once",
                            grant_label(history, *grant)
                        );
                        return Err(HistoryError::at(index, message));
                    }
                    // An exit after a crash or a later grant ended the section changes nothing.
                    if open.get(&grant.client) == Some(&ordinal) {
                        open.remove(&grant.client);
                        grants.close(ordinal, time_ns, CsEnd::Exit(*why), index);
                        if !nesting.is_empty() {
                            nesting.remove(&grant.client);
                        }
                    }
                }
                Event::Storage(op) => {
                    let what = || format!("storage op {}", op_label(history, op.op));
                    grants.known(history, index, op.grant, what)?;
                    if op.op.client != op.grant.client {
                        let message = format!(
                            "{} names grant {}, which another client holds",
                            what(),
                            grant_label(history, op.grant)
                        );
                        return Err(HistoryError::at(index, message));
                    }
                }
                Event::Fault(fault) if fault.kind == FaultKind::Crash => {
                    for node in &fault.nodes {
                        if let Some(ordinal) = open.remove(node) {
                            grants.close(ordinal, time_ns, CsEnd::Crash, index);
                        }
                        nesting.remove(node);
                        crashed.insert(*node);
                    }
                }
                Event::Fault(fault) if fault.kind == FaultKind::Restart => {
                    if !crashed.is_empty() {
                        for node in &fault.nodes {
                            crashed.remove(node);
                        }
                    }
                }
                Event::Nest { client } => {
                    if !open.contains_key(client) {
                        let message = format!(
                            "{} takes the lock again (nest) outside a critical section: it \
                             holds no grant",
                            history.name(*client)
                        );
                        return Err(HistoryError::at(index, message));
                    }
                    nesting.insert(*client);
                }
                Event::Nested { client } => {
                    if !nesting.remove(client) {
                        let message = format!(
                            "{} holds the lock again (nested) with no nested acquisition \
                             (nest) waiting in its critical section",
                            history.name(*client)
                        );
                        return Err(HistoryError::at(index, message));
                    }
                }
                Event::Pick {
                    client,
                    lock,
                    resource,
                } => {
                    picked.insert(*client, (*lock, *resource));
                }
                Event::Shared { client } => {
                    shared_next.insert(*client);
                }
                Event::Request { client }
                    if !picked.is_empty()
                        || !shared_next.is_empty()
                        || !requested_shared.is_empty() =>
                {
                    if let Some(&pick) = picked.get(client) {
                        requested.insert(*client, pick);
                    }
                    // A request is shared only right after a `Shared` of its client.
                    match shared_next.remove(client) {
                        true => requested_shared.insert(*client),
                        false => requested_shared.remove(client),
                    };
                }
                Event::Due { .. } => grants.any_due = true,
                Event::Request { .. }
                | Event::AcquireFailed { .. }
                | Event::Fault(_)
                | Event::Issued { .. }
                | Event::Enqueued { .. }
                | Event::Claimed { .. }
                | Event::Dequeued { .. }
                | Event::Done { .. } => {}
            }
        }
        // Service order: by the entry that issued each grant; two grants of one ticket (a
        // client re-entering an ownership the service never ended) in the order learned.
        let mut order: Vec<usize> = (0..grants.list.len()).collect();
        order.sort_by_key(|&ordinal| {
            let g = &grants.list[ordinal];
            (g.issued_entry, g.entry)
        });
        grants.rank = vec![0; order.len()];
        for (rank, &ordinal) in order.iter().enumerate() {
            grants.rank[ordinal] = rank;
        }
        grants.service_order = order;
        Ok(grants)
    }

    /// The place of grant `ordinal` in service order: of two grants, the one with the lower
    /// rank was issued first.
    pub(super) fn rank(&self, ordinal: usize) -> usize {
        self.rank[ordinal]
    }

    /// The grants in service order.
    pub(super) fn in_service_order(&self) -> impl Iterator<Item = &Grant> {
        self.service_order
            .iter()
            .map(|&ordinal| &self.list[ordinal])
    }

    /// The grant ordinal of a grant that `build` has seen.
    ///
    /// # Panics
    /// If the grant is not in the table: `build` rejects histories that name unknown grants.
    pub(super) fn ordinal(&self, grant: GrantId) -> usize {
        self.clients
            .ordinal(grant)
            .expect("a grant the table has seen")
    }

    /// The client's grant whose critical section was open just before entry `entry`.
    pub(super) fn open_before(&self, client: NodeId, entry: usize) -> Option<&Grant> {
        let ordinals = &self.clients.get(client)?.in_order;
        // A client's sections never overlap (a regrant ends the previous one), so only its
        // last grant before the entry can still be open.
        let before = ordinals.partition_point(|&ordinal| self.list[ordinal].entry < entry);
        let last = &self.list[*ordinals.get(before.checked_sub(1)?)?];
        last.open_before(entry).then_some(last)
    }

    fn push(
        &mut self,
        history: &History,
        entry: usize,
        issued_entry: usize,
        id: GrantId,
        token: Option<u64>,
        (lock, resource): (u64, u64),
    ) {
        let ordinal = self.list.len();
        if let Some(first) = self.list.first() {
            self.one_lock &= first.lock == lock;
            self.one_resource &= first.resource == resource;
        }
        let from_ns = history.entries[entry].time_ns;
        let to_ns = history.end_ns;
        self.list.push(Grant {
            id,
            entry,
            issued_entry,
            token,
            lock,
            resource,
            shared: false,
            from_ns,
            to_ns,
            end: CsEnd::RunEnd,
            end_entry: None,
            exited: false,
        });
        self.clients.insert(id, ordinal);
    }

    fn close(&mut self, ordinal: usize, time_ns: u64, end: CsEnd, entry: usize) {
        let grant = &mut self.list[ordinal];
        grant.to_ns = time_ns;
        grant.end = end;
        grant.end_entry = Some(entry);
    }

    /// The ordinal of `grant`, named by `what()` at entry `index`, or an error saying whether it
    /// is granted only later or never. `what` is a closure so valid histories pay for no text.
    fn known(
        &self,
        history: &History,
        index: usize,
        grant: GrantId,
        what: impl Fn() -> String,
    ) -> Result<usize, HistoryError> {
        if let Some(ordinal) = self.clients.ordinal(grant) {
            return Ok(ordinal);
        }
        let later = history.entries[index..].iter().position(
            |entry| matches!(entry.event, Event::Grant { grant: granted, .. } if granted == grant),
        );
        let when = match later {
            Some(offset) => format!("which is granted only later, at entry {}", index + offset),
            None => "which was never granted".to_owned(),
        };
        let message = format!(
            "{} names grant {}, {when}",
            what(),
            grant_label(history, grant)
        );
        Err(HistoryError::at(index, message))
    }
}

/// The grants of each client, by node id: in a vector for the node ids a simulation gives
/// (small, from 0), in a map beyond them (a judged history may name any). This runs once per
/// checked run, on every run of a sweep, and each storage op looks its grant up: a map of
/// `GrantId`s cost a tenth of a Redis sweep's time.
#[derive(Debug, Default)]
struct Clients {
    dense: Vec<ClientGrants>,
    sparse: BTreeMap<NodeId, ClientGrants>,
}

/// Node ids below this are kept in [`Clients::dense`].
const DENSE_CLIENTS: u32 = 1 << 16;

/// One client's grants: their ordinals, in grant order. `build` refuses a grant whose
/// sequence number is not the next, so sequence number `seq` is at `seq - 1`.
#[derive(Debug, Default)]
struct ClientGrants {
    in_order: Vec<usize>,
}

impl ClientGrants {
    fn ordinal(&self, seq: u32) -> Option<usize> {
        self.in_order.get((seq as usize).wrapping_sub(1)).copied()
    }
}

impl Clients {
    fn get(&self, client: NodeId) -> Option<&ClientGrants> {
        match client.0 < DENSE_CLIENTS {
            true => self.dense.get(client.0 as usize),
            false => self.sparse.get(&client),
        }
    }

    fn ordinal(&self, grant: GrantId) -> Option<usize> {
        self.get(grant.client)?.ordinal(grant.seq)
    }

    /// How many grants `client` had so far.
    fn granted(&self, client: NodeId) -> usize {
        self.get(client).map_or(0, |c| c.in_order.len())
    }

    fn insert(&mut self, grant: GrantId, ordinal: usize) {
        let client = match grant.client.0 < DENSE_CLIENTS {
            true => {
                let index = grant.client.0 as usize;
                if index >= self.dense.len() {
                    self.dense.resize_with(index + 1, ClientGrants::default);
                }
                &mut self.dense[index]
            }
            false => self.sparse.entry(grant.client).or_default(),
        };
        client.in_order.push(ordinal);
    }
}

/// The entry of the first `Issued` of `key` in `issued`, sorted by (key, entry).
fn first_issued(issued: &[((NodeId, u64), usize)], key: (NodeId, u64)) -> Option<usize> {
    let at = issued.partition_point(|&(k, _)| k < key);
    issued
        .get(at)
        .filter(|&&(k, _)| k == key)
        .map(|&(_, entry)| entry)
}

/// A process a crash fault named records nothing until a restart names it, but the exit of
/// its grant as crashed (a recorder may note the end of the grant it lost).
fn check_alive(
    history: &History,
    index: usize,
    crashed: &BTreeSet<NodeId>,
) -> Result<(), HistoryError> {
    let (client, what) = match &history.entries[index].event {
        Event::Request { client } => (*client, "requests the lock"),
        Event::Grant { grant, .. } => (grant.client, "is granted the lock"),
        Event::AcquireFailed { client } => (*client, "gives up acquiring"),
        Event::Exit { grant, why } if *why != ExitReason::Crashed => {
            (grant.client, "exits a critical section")
        }
        Event::Dequeued { client, .. } => (*client, "dequeues a job"),
        Event::Done { client, .. } => (*client, "finishes a job"),
        Event::Due { client, .. } => (*client, "finds a tick due"),
        Event::Pick { client, .. } => (*client, "picks a resource"),
        Event::Shared { client } => (*client, "asks to share the lock"),
        Event::Nest { client } => (*client, "takes the lock again (nest)"),
        Event::Nested { client } => (*client, "holds the lock again (nested)"),
        // Recorded by the service, storage or the world, not by the process they name.
        Event::Exit { .. }
        | Event::Storage(_)
        | Event::Fault(_)
        | Event::Issued { .. }
        | Event::Enqueued { .. }
        | Event::Claimed { .. } => return Ok(()),
    };
    if !crashed.contains(&client) {
        return Ok(());
    }
    let message = format!(
        "{} {what} after a crash and before any restart: a crashed process does nothing \
         until it restarts",
        history.name(client)
    );
    Err(HistoryError::at(index, message))
}

/// Entries must be in true-time order and within the run.
fn check_time(history: &History, index: usize) -> Result<(), HistoryError> {
    let time_ns = history.entries[index].time_ns;
    if let Some(previous) = index
        .checked_sub(1)
        .map(|previous| &history.entries[previous])
    {
        if time_ns < previous.time_ns {
            let message = format!(
                "time {time_ns} ns is before the previous entry's time {} ns: entries must be in \
                 true-time order",
                previous.time_ns
            );
            return Err(HistoryError::at(index, message));
        }
    }
    if time_ns > history.end_ns {
        let message = format!(
            "time {time_ns} ns is after the run's end ({} ns, end_ns)",
            history.end_ns
        );
        return Err(HistoryError::at(index, message));
    }
    Ok(())
}
