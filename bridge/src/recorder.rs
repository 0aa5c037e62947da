//! The recorder: what async code calls to write a lockstep history.
//!
//! A lock client under test calls [`Recorder::request`], [`Recorder::grant`] and
//! [`Recorder::exit`] around its critical sections; the storage host records each operation
//! as it handles it ([`Recorder::storage`]), the lock service what it issued
//! ([`Recorder::issued`]) and the fault driver what it did ([`Recorder::fault_at`]). Times
//! come from the clock the recorder is built with: the runtime's simulated time in
//! nanoseconds (turmoil: `turmoil::sim_elapsed()`). [`Recorder::history`] hands the result to
//! `lockstep_check::check` as it is.
//!
//! The recorder is single-threaded (`Rc<RefCell<..>>`), as the simulated runtimes run every
//! host on one thread; a clone shares the same history.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use lockstep_check::{
    Entry, Event, ExitReason, Fault, FaultKind, GrantId, History, NodeId, OpId, StorageOp,
};

/// A shared, cloneable history being recorded.
#[derive(Clone)]
pub struct Recorder {
    inner: Rc<RefCell<Inner>>,
}

struct Inner {
    clock: Box<dyn Fn() -> Option<u64>>,
    names: Vec<String>,
    entries: Vec<Entry>,
    /// Per node: grants and storage operations numbered so far.
    grants: Vec<u32>,
    ops: Vec<u32>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.borrow();
        f.debug_struct("Recorder")
            .field("names", &inner.names)
            .field("entries", &inner.entries.len())
            .finish()
    }
}

impl Recorder {
    /// A recorder stamping entries with `clock` (nanoseconds of simulated time; `None`
    /// outside the runtime, when the entry takes the last entry's time).
    pub fn new(clock: impl Fn() -> Option<u64> + 'static) -> Recorder {
        Recorder {
            inner: Rc::new(RefCell::new(Inner {
                clock: Box::new(clock),
                names: Vec::new(),
                entries: Vec::new(),
                grants: Vec::new(),
                ops: Vec::new(),
            })),
        }
    }

    /// Registers a process by name and returns its id; a name registered before keeps its id.
    /// Register every host before the run, in the order the history should name them.
    pub fn register(&self, name: &str) -> NodeId {
        if let Some(id) = self.node(name) {
            return id;
        }
        let mut inner = self.inner.borrow_mut();
        inner.names.push(name.to_string());
        inner.grants.push(0);
        inner.ops.push(0);
        NodeId(u32::try_from(inner.names.len() - 1).expect("fewer than 2^32 processes"))
    }

    /// The id of a registered name.
    pub fn node(&self, name: &str) -> Option<NodeId> {
        let inner = self.inner.borrow();
        let i = inner.names.iter().position(|n| n == name)?;
        Some(NodeId(u32::try_from(i).expect("fewer than 2^32 processes")))
    }

    /// The current time of the recorder's clock, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        let inner = self.inner.borrow();
        let last = inner.entries.last().map_or(0, |e| e.time_ns);
        (inner.clock)().unwrap_or(last)
    }

    /// A client starts trying to acquire the lock.
    pub fn request(&self, client: NodeId) {
        self.push(None, Event::Request { client });
    }

    /// A client gave up acquiring.
    pub fn acquire_failed(&self, client: NodeId) {
        self.push(None, Event::AcquireFailed { client });
    }

    /// The lock service made `client` the owner; `ticket` names the acquisition (the grant
    /// names it again).
    pub fn issued(&self, client: NodeId, ticket: u64) {
        self.push(None, Event::Issued { client, ticket });
    }

    /// A client decided it holds the lock: records the grant and returns its id.
    pub fn grant(&self, client: NodeId, token: Option<u64>, ticket: Option<u64>) -> GrantId {
        let seq = {
            let mut inner = self.inner.borrow_mut();
            let n = &mut inner.grants[client.0 as usize];
            *n += 1;
            *n
        };
        let grant = GrantId { client, seq };
        self.push(
            None,
            Event::Grant {
                grant,
                token,
                ticket,
            },
        );
        grant
    }

    /// A client stops acting for a grant.
    pub fn exit(&self, grant: GrantId, why: ExitReason) {
        self.push(None, Event::Exit { grant, why });
    }

    /// The next storage operation's id for `client` (records nothing: storage records the
    /// operation where it lands).
    pub fn next_op(&self, client: NodeId) -> OpId {
        let mut inner = self.inner.borrow_mut();
        let n = &mut inner.ops[client.0 as usize];
        *n += 1;
        OpId { client, seq: *n }
    }

    /// Storage handled an operation.
    pub fn storage(&self, op: StorageOp) {
        self.push(None, Event::Storage(op));
    }

    /// A fault applied at `time_ns` (by a driver outside the runtime's hosts).
    pub fn fault_at(&self, time_ns: u64, kind: FaultKind, nodes: Vec<NodeId>, detail: String) {
        self.push(
            Some(time_ns),
            Event::Fault(Fault {
                kind,
                nodes,
                detail,
            }),
        );
    }

    /// The history so far, ending at `end_ns`; `complete`: the run reached its planned end.
    pub fn history(&self, end_ns: u64, complete: bool) -> History {
        let inner = self.inner.borrow();
        History {
            entries: inner.entries.clone(),
            names: inner.names.clone(),
            end_ns: end_ns.max(inner.entries.last().map_or(0, |e| e.time_ns)),
            complete,
        }
    }

    /// Appends in time order. Hosts of one simulated step may read clocks a tick apart;
    /// an entry never goes before the last one (at most one tick later than it happened).
    fn push(&self, at: Option<u64>, event: Event) {
        let now = at.unwrap_or_else(|| self.now_ns());
        let mut inner = self.inner.borrow_mut();
        let last = inner.entries.last().map_or(0, |e| e.time_ns);
        inner.entries.push(Entry {
            time_ns: now.max(last),
            event,
        });
    }
}
