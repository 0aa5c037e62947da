//! The workload client shared by every lock family: acquire -> read storage -> work for a
//! drawn duration -> optionally check the lease is still valid -> write `value + 1` with the
//! fencing token -> release, then think and start again.
//!
//! It records the history the checker judges: `Request`, `Grant`, `AcquireFailed`, `Exit`.
//! It reaches named marks where real code could be interrupted, so a scenario can pause the
//! client at the worst moment: `granted` (the read is already sent), `read-done`, `work-done`
//! (before the validity check) and `validity-checked` (only when it checks, right before the
//! write). The steps after `work-done` and `validity-checked` run as separate events, the gaps
//! a GC pause can fall into (K1 in docs/catalogue.md).
//!
//! Against compare-and-set storage the client first claims the resource with its token, in a
//! step of its own after `granted`, then reads, works and writes as above (K7 in
//! docs/catalogue.md).
//!
//! When the resource lives in etcd (J4 in docs/catalogue.md) the loop is the same; its
//! operations go out through the lock client instead of to a storage node, and the etcd member
//! answers with the same replies.
//!
//! # Leader election as a workload (`kind = "leader"`)
//!
//! A leader client mirrors an application on client-go's `LeaderElector`
//! (`tools/leaderelection/leaderelection.go`: `Run` campaigns, `OnStartedLeading` starts the
//! work, `OnStoppedLeading` runs when renewing fails) or on etcd's `Election.Campaign` and
//! Curator's `LeaderLatch`: it campaigns (`acquire`), and once granted it leads until told
//! otherwise, performing a *task* every `task_every` (from the end of one task to the start of
//! the next): the counter loop's critical work (claim, read, work, check, write `value + 1`
//! with the grant's token), so each accepted write is one item and duplicates or gaps of items
//! show in the history. It never releases on its own; a task whose storage operation times
//! out or is rejected fails alone and the term goes on. One `Grant`..`Exit` is one term.
//!
//! # A job queue's workers (`kind = "queue"`)
//!
//! A worker takes a job from the queue (its lock client's `acquire` is the dequeue, answered
//! with [`LockSignal::Job`]), records `Dequeued`, works for a drawn `work` time, records `Done`
//! (the job's effect happened) and reaches `work-done`, then, as a separate step, commits the
//! job (the lock client's `release`), thinks and takes the next. An empty queue, or any failed
//! dequeue, is a think before the next try. The history then judges jobs, not grants: the
//! worker records no `Request`, `Grant` or storage operation.
//!
//! # Told to stop (`terminate`, SIGTERM)
//!
//! A client told to stop ([`lockstep_sim::Fault::Terminate`]) starts no new acquisition or
//! job. Holding the lock (in a critical section, or a leader between tasks), it leaves the
//! critical section at once (`Exit` with reason `terminated`: its cancelled context stops the
//! work, the write it had not sent is never sent) and releases the lock, as a Go program's
//! `defer mu.Unlock()` after `signal.NotifyContext` does, or client-go's `ReleaseOnCancel`.
//! Still acquiring, it releases what it is granted, if anything, as soon as it is granted.
//! A worker finishes its job and commits it first. Then it idles until the world kills it.
//!
//! # A scheduled job (`kind = "cron"`)
//!
//! Every client keeps the job's schedule on its own wall clock ([`cron`]) and, at each tick
//! due, records `Due` and tries the lock; the winner's critical section (claim, read, work,
//! check, write) is the job and its accepted write the job's effect. Between ticks a client
//! is idle: it does not think and try again. A failed acquisition waits for the next tick.
//!
//! # Readers and writers (`kind = "read-write"`)
//!
//! The counter loop on one read-write lock ([`read_write`]): each client keeps one side of
//! it for the run ([`Access`], told to its lock client before each acquisition); a reader
//! records `Shared` before its `Request` and leaves after its work without writing.
//!
//! # A nested acquisition (`[workload] reenter`)
//!
//! With `reenter`, a critical section of the counter (or keys) loop calls, after its read, a
//! function that takes the same lock again around the work (the seed's re-entrancy question:
//! Java's `ReentrantLock`, Redisson's and Curator's hold counts, Go's `sync.Mutex`
//! deadlocking): it records `Nest` and asks its lock client to [`LockClient::reenter`]; once
//! `Nested` it works (a drawn `work`), leaves the nested hold ([`LockClient::leave`]) as the
//! function returns, and the outer section works again (another drawn `work`) before
//! `work-done`, its validity check and its write, under the outer hold. A nested acquisition
//! that fails ends the critical section as abandoned, as the exception of the inner call
//! would. A section that ends while the nested hold is held (told to stop) leaves it before it
//! releases, as the nested call's `finally` would. What the family's library does decides the
//! rest: a count grants at once and keeps the lock; a re-entry without a count frees the lock
//! at the inner unlock, under the outer holder's work; a lock that is not re-entrant waits for
//! its own lease to run out.
//!
//! When the lock client says [`LockSignal::Lost`], [`OnStoppedLeading`] decides: `Exit` (the
//! process dies, as client-go users' `klog.Fatal` in `OnStoppedLeading`; releasing first is
//! client-go's `ReleaseOnCancel`), `Cancel` (work notices the cancelled context only after a
//! drawn delay) or `Ignore` (it never notices). A failed validity check stops the term at once
//! as `Exit` does, whatever the mode.

use std::fmt::Debug;

use lockstep_check::{Event, ExitReason, GrantId, NodeId as HistNode, OpId};
use lockstep_sim::{ClockKind, Distribution, Dur, Env, LocalTime, NodeId};
use serde::de::DeserializeOwned;

use crate::env::{Host, LockSide, Scoped};
use crate::keys::Check;
use crate::lock::{Access, LockClient, LockSignal};
use crate::node::{Msg, Timer, WorkTimer};
use crate::observe::{ACQUISITIONS, Observation};
use crate::storage::{RequestKind, StorageReply, StorageRequest, StorageResult};

use cron::Fire;
pub use leader::OnStoppedLeading;

/// Where a workload client sends its storage operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place<R> {
    /// To the storage node.
    Node(NodeId),
    /// Through its lock client, to the lock service that keeps the resource as `R`.
    Service(R),
}

/// How a workload client behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Time between critical sections (and before the first).
    pub think: Distribution,
    /// Time spent working between the read and the write.
    pub work: Distribution,
    /// Check the lease's validity on the client's own clock right before writing.
    pub check_validity_before_write: bool,
    /// How long the client waits for storage before it abandons the critical section.
    pub storage_timeout: Dur,
    /// The loop the client runs.
    pub kind: WorkloadKind,
    /// How each acquisition goes, when the scenario says (`[workload] acquire`): the family's
    /// clients then try once or block ([`crate::Family::try_once`]).
    pub acquire: Option<Acquire>,
    /// Count acquisitions ([`ACQUISITIONS`]), as the family's clients count their requests
    /// ([`crate::Family::count_requests`]): the herd figure, when the scenario sets `acquire`
    /// and the family counts.
    pub count_herd: bool,
    /// Take the lock again inside each critical section, around the work (`[workload]
    /// reenter`): see "A nested acquisition" above.
    pub reenter: bool,
    /// What sets clients apart (`[workload.per_client.client-N]`), by client from
    /// `client-1`; empty when none is set apart.
    pub per_client: std::sync::Arc<[PerClient]>,
}

/// One client's own settings (`[workload.per_client.client-N]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerClient {
    /// How long after the start of the run the process starts (by its own monotonic clock);
    /// a restart starts it at once.
    pub start: Dur,
    /// The rows it picks from, uniformly (`kind = "keys"`); all of them when `None`.
    pub rows: Option<std::sync::Arc<[u32]>>,
}

/// `[workload] acquire`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// As the family's client does by default: wait (or retry) until granted.
    Block,
    /// One try: give up at once when the lock is held.
    Try,
}

impl WorkloadConfig {
    /// Whether the clients run the leader loop (their critical sections are leadership terms).
    pub fn is_leader(&self) -> bool {
        matches!(self.kind, WorkloadKind::Leader(_))
    }

    /// Whether the clients are a job queue's workers.
    pub fn is_queue(&self) -> bool {
        matches!(self.kind, WorkloadKind::Queue(_))
    }

    /// Whether the clients run a scheduled job.
    pub fn is_cron(&self) -> bool {
        matches!(self.kind, WorkloadKind::Cron(_))
    }

    /// How the clients split into writers and readers, when they share a read-write lock.
    pub fn read_write(&self) -> Option<&ReadWriteConfig> {
        match &self.kind {
            WorkloadKind::ReadWrite(rw) => Some(rw),
            _ => None,
        }
    }

    /// Client `index`'s own settings (from 1).
    pub fn client(&self, index: u32) -> PerClient {
        self.per_client
            .get(index as usize - 1)
            .cloned()
            .unwrap_or_default()
    }

    /// The rows and locks, when the clients work on many keys.
    pub fn keys(&self) -> Option<&KeysConfig> {
        match &self.kind {
            WorkloadKind::Keys(keys) => Some(keys),
            _ => None,
        }
    }
}

/// What a workload asks of the family and of the storage. The loader checks it against the
/// family's answers ([`crate::Family::dequeues`], [`crate::Family::many_locks`],
/// [`crate::Family::read_write`]) and the scenario's `[storage]`, and names what is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// A lock client whose acquire dequeues a job.
    pub dequeues: bool,
    /// A lock client that takes many locks ([`crate::LockClient::select`]).
    pub many_locks: bool,
    /// A lock client with a read-write lock ([`crate::LockClient::access`]).
    pub read_write: bool,
    /// The resource in the storage node, not kept by the lock service.
    pub storage_node: bool,
    /// Storage that admits more than one holder at a time: not `cas-token`, whose claim lets
    /// one in.
    pub shared_storage: bool,
    /// A grant that lasts for as long as its holder runs and keeps it: not one that lapses on
    /// its own ([`crate::Family::lapses`]), since the holder never lets go to take it again.
    pub held: bool,
}

impl Needs {
    /// Nothing beyond a lock.
    pub const NONE: Needs = Needs {
        dequeues: false,
        many_locks: false,
        read_write: false,
        storage_node: false,
        shared_storage: false,
        held: false,
    };
}

/// The `[workload]` keys every kind shares, as a kind's settings may need them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shared {
    /// `clients`.
    pub clients: u32,
    /// Whether the file gave `think_ms` (a kind whose clients do not think refuses it).
    pub think_given: bool,
}

/// A kind of workload: the loop a workload client runs, chosen by `[workload] kind`. A kind
/// lives in its own file of this folder, implements this trait on its settings, and is listed
/// once in the registry (`workloads!` below); the loader takes its keys, its checks against
/// the family and its errors from there. The client loop ([`Client`]) is shared: a kind is a
/// variation of its steps (think, acquire, critical section, release).
pub trait Workload:
    Clone + Debug + PartialEq + Eq + Send + Sync + Into<WorkloadKind> + 'static
{
    /// Its name as `workload.kind` in scenario files: `cron`.
    const KIND: &'static str;
    /// What it is, in sentences: `a scheduled job`.
    const WHAT: &'static str;
    /// The history events its clients record besides the counter loop's (`request`, `grant`,
    /// `acquire_failed`, `exit` and storage ops), by their names in history files.
    const RECORDS: &'static [&'static str] = &[];
    /// The verdict's sections that measure it (`cron`, `queue`, ...), beyond the safety checks
    /// and the liveness metrics every history gets.
    const MEASURES: &'static [&'static str] = &[];
    /// What it asks of the family and the storage.
    const NEEDS: Needs = Needs::NONE;
    /// Its own `[workload]` keys as written: serde, unknown keys rejected.
    type Keys: DeserializeOwned;

    /// Its settings from its keys; every problem goes into `check` under `workload.<key>`.
    fn resolve(keys: &Self::Keys, shared: &Shared, check: &mut Check) -> Self;
}

/// Something done for every workload kind of the registry ([`for_each_workload`]).
pub trait VisitWorkload {
    /// Does it for kind `W`.
    fn visit<W: Workload>(&mut self);
}

macro_rules! workloads {
    ($($module:ident => $variant:ident($kind:ident)),* $(,)?) => {
        $(pub mod $module;)*
        $(pub use $module::$kind;)*

        /// The loop a workload client runs: one variant per kind of the registry.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum WorkloadKind {
            $(
                #[doc = concat!("[`", stringify!($kind), "`].")]
                $variant($kind),
            )*
        }

        impl WorkloadKind {
            /// Its name as `workload.kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(WorkloadKind::$variant(_) => <$kind as Workload>::KIND,)*
                }
            }

            /// What it asks of the family and the storage.
            pub fn needs(&self) -> Needs {
                match self {
                    $(WorkloadKind::$variant(_) => <$kind as Workload>::NEEDS,)*
                }
            }

            /// The history events its clients record besides the counter loop's.
            pub fn records(&self) -> &'static [&'static str] {
                match self {
                    $(WorkloadKind::$variant(_) => <$kind as Workload>::RECORDS,)*
                }
            }

            /// The verdict's sections that measure it.
            pub fn measures(&self) -> &'static [&'static str] {
                match self {
                    $(WorkloadKind::$variant(_) => <$kind as Workload>::MEASURES,)*
                }
            }
        }

        $(
            impl From<$kind> for WorkloadKind {
                fn from(kind: $kind) -> WorkloadKind {
                    WorkloadKind::$variant(kind)
                }
            }
        )*

        /// Calls `visitor` with every workload kind of the registry, in its order.
        pub fn for_each_workload(visitor: &mut impl VisitWorkload) {
            $(visitor.visit::<$kind>();)*
        }
    };
}

// The registry: every workload kind, one line each (its file and its `Workload` type).
workloads! {
    counter => Counter(Counter),
    leader => Leader(LeaderConfig),
    queue => Queue(Queue),
    cron => Cron(CronConfig),
    keys => Keys(KeysConfig),
    read_write => ReadWrite(ReadWriteConfig),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Thinking,
    Acquiring,
    /// Granted; the claim is sent by a timer (`op` 0) and then awaited.
    Claiming {
        op: u32,
    },
    Reading {
        op: u32,
    },
    Working,
    Writing {
        op: u32,
    },
    /// Releasing; `restart`: then reset the lock client (the process restarted).
    Releasing {
        restart: bool,
    },
    /// A leader between tasks.
    Idle,
    /// A worker on a job.
    Job {
        job: u64,
    },
    /// Told to stop, done with the lock: it waits to be killed.
    Stopped,
    /// A scheduled job is done; the lock stays held until `lock_at_least` has passed.
    Holding {
        grant: u32,
    },
    /// In a critical section, read done: taking the lock again (`reenter`).
    Nesting,
    /// The work done under the nested hold: leaving it.
    Unnesting,
    /// Leaving the critical section with the nested hold still held: the nested call's
    /// unlock first, as its `finally` would, then the release (`restart` as `Releasing`'s).
    Unwinding {
        restart: bool,
    },
}

/// The current grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    id: GrantId,
    token: Option<u64>,
    /// The value read under this grant.
    base: u64,
    /// The client's monotonic clock at the grant.
    at: LocalTime,
}

/// A workload client with its lock client `L`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client<L: LockClient> {
    config: WorkloadConfig,
    lock: L,
    /// Where its storage operations go.
    place: Place<L::Resource>,
    /// Claim the resource before reading (compare-and-set storage).
    claim: bool,
    phase: Phase,
    held: Option<Held>,
    /// A leader whose lock client said `Lost` and that goes on acting (cancel, ignore).
    lost: bool,
    /// Told to stop (SIGTERM): no new acquisition, and the lock released once held.
    terminating: bool,
    /// A scheduled job's next instant on the wall clock, once its timer is armed.
    next_tick: Option<i64>,
    /// The row of the current (or next) critical section (the `keys` workload; else 0).
    row: u64,
    /// Its side of the lock: a read-write lock's reader or writer, or the plain lock.
    access: Access,
    /// The nested call of this critical section has returned (`reenter`): the work now is
    /// the outer section's.
    unnested: bool,
    /// The nested hold is held: granted, not yet left.
    nest_held: bool,
    /// Grants and operations so far. Bookkeeping for the history, kept across crashes so ids
    /// stay unique; no decision reads them.
    grants: u32,
    ops: u32,
    /// Its own settings: a late start, pinned rows.
    own: PerClient,
}

/// The environment of a workload client of `L` in a world whose service timers are `S`.
pub trait ClientEnv<L: LockClient, S>: Host<Msg<L::Msg>, Timer<S, L::Timer>> {}

impl<L: LockClient, S, E: Host<Msg<L::Msg>, Timer<S, L::Timer>>> ClientEnv<L, S> for E {}

/// The lock client's view of its workload client's environment.
type LockEnv<'a, E, L, S> =
    Scoped<'a, E, LockSide<<L as LockClient>::Msg, S, <L as LockClient>::Timer>>;

impl<L: LockClient> Client<L> {
    /// A client that will start thinking when the run starts, with its storage at `place`.
    pub fn new(config: WorkloadConfig, lock: L, place: Place<L::Resource>) -> Client<L> {
        Client {
            config,
            lock,
            place,
            claim: false,
            phase: Phase::Thinking,
            held: None,
            lost: false,
            terminating: false,
            next_tick: None,
            row: 0,
            access: Access::Exclusive,
            unnested: false,
            nest_held: false,
            grants: 0,
            ops: 0,
            own: PerClient::default(),
        }
    }

    /// Its lock client.
    pub fn lock(&self) -> &L {
        &self.lock
    }

    pub(crate) fn lock_mut(&mut self) -> &mut L {
        &mut self.lock
    }

    /// The same client on side `access` of a read-write lock (`kind = "read-write"`).
    pub fn accessing(self, access: Access) -> Client<L> {
        Client { access, ..self }
    }

    /// The same client, claiming the resource after each grant when `claim` is true.
    pub fn claiming(self, claim: bool) -> Client<L> {
        Client { claim, ..self }
    }

    /// The same client with its own settings (`[workload.per_client.client-N]`).
    pub fn with_own(self, own: PerClient) -> Client<L> {
        Client { own, ..self }
    }

    /// The run starts: the process starts now, or its own `start` later (a timer on its
    /// monotonic clock; nothing of it runs before, not even its lock client).
    pub(crate) fn on_first_start<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        if self.own.start > Dur::ZERO {
            ctx.set_timer(
                ClockKind::Mono,
                self.own.start,
                Timer::Work(WorkTimer::Start),
            );
        } else {
            self.on_start(ctx);
        }
    }

    pub(crate) fn on_start<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        if let WorkloadKind::Cron(cron) = &self.config.kind {
            let (next, after) = cron.next_after(ctx.wall());
            self.next_tick = Some(next);
            ctx.set_timer(ClockKind::Mono, after, Timer::Work(WorkTimer::Tick));
        }
        self.think(ctx);
    }

    /// Whether it is in a critical section (from its grant to its exit) or on a job: the
    /// role [`crate::family::played::HOLDER`].
    pub fn holds(&self) -> bool {
        self.held.is_some() || matches!(self.phase, Phase::Job { .. })
    }

    pub(crate) fn on_crash(&mut self) {
        self.phase = Phase::Thinking;
        self.held = None;
        self.nest_held = false;
        self.lost = false;
        self.terminating = false;
        self.next_tick = None;
        self.lock.reset();
    }

    /// Told to stop (SIGTERM): see the module's documentation.
    pub(crate) fn on_terminate<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        self.terminating = true;
        match self.phase {
            Phase::Thinking => self.phase = Phase::Stopped,
            Phase::Holding { .. } => self.release(ctx, false),
            Phase::Claiming { .. }
            | Phase::Reading { .. }
            | Phase::Working
            | Phase::Writing { .. }
            | Phase::Idle => self.exit(ctx, ExitReason::Terminated, false),
            // Granted or not, the answer decides; a worker commits its job; a release ends;
            // a nested call returns first.
            Phase::Acquiring
            | Phase::Job { .. }
            | Phase::Releasing { .. }
            | Phase::Stopped
            | Phase::Nesting
            | Phase::Unnesting
            | Phase::Unwinding { .. } => {}
        }
    }

    fn me(ctx: &impl Env) -> HistNode {
        HistNode(ctx.id().0)
    }

    fn think<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        self.held = None;
        self.lost = false;
        self.nest_held = false;
        if self.terminating {
            self.phase = Phase::Stopped;
            return;
        }
        self.phase = Phase::Thinking;
        if self.config.is_cron() {
            return; // Idle until the next tick.
        }
        let delay = self.config.think.sample(ctx.rng());
        ctx.set_timer(ClockKind::Mono, delay, Timer::Work(WorkTimer::Think));
    }

    /// A scheduled job's timer fired: run the tick if it is due by the wall clock (idle
    /// clients only), and arm the timer for the next.
    fn on_tick<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        let (WorkloadKind::Cron(cron), Some(next)) = (&self.config.kind, self.next_tick) else {
            return;
        };
        if self.terminating {
            return; // The scheduler stopped with the process.
        }
        let fire = cron.fire(next, ctx.wall());
        let tick = match fire {
            Fire::Early(after) => {
                ctx.set_timer(ClockKind::Mono, after, Timer::Work(WorkTimer::Tick));
                return;
            }
            Fire::Due { tick, next, after } => {
                self.next_tick = Some(next);
                ctx.set_timer(ClockKind::Mono, after, Timer::Work(WorkTimer::Tick));
                tick
            }
        };
        ctx.record(Event::Due {
            tick,
            client: Self::me(ctx),
        });
        if self.phase == Phase::Thinking {
            ctx.record(Event::Request {
                client: Self::me(ctx),
            });
            self.phase = Phase::Acquiring;
            if self.config.count_herd {
                ctx.observe(Observation::Count(ACQUISITIONS));
            }
            let signal = self.lock.acquire(&mut LockEnv::<_, L, S>::new(ctx));
            self.on_signal(ctx, signal);
        }
    }

    pub(crate) fn on_work_timer<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, timer: WorkTimer) {
        match (self.phase, timer) {
            (_, WorkTimer::Tick) => self.on_tick(ctx),
            (Phase::Thinking, WorkTimer::Start) => self.on_start(ctx),
            (Phase::Holding { grant }, WorkTimer::Unlock { grant: g }) if grant == g => {
                self.release(ctx, false);
            }
            (Phase::Thinking, WorkTimer::Think) => {
                if let WorkloadKind::Keys(keys) = &self.config.kind {
                    let row = match &self.own.rows {
                        Some(rows) => rows[ctx.rng().below(rows.len() as u64) as usize],
                        None => keys.draw(ctx.rng()),
                    };
                    let lock = keys.lock_of(row);
                    self.row = u64::from(row);
                    ctx.record(Event::Pick {
                        client: Self::me(ctx),
                        lock: u64::from(lock),
                        resource: self.row,
                    });
                    self.lock.select(lock);
                }
                if self.access != Access::Exclusive {
                    if self.access == Access::Read {
                        ctx.record(Event::Shared {
                            client: Self::me(ctx),
                        });
                    }
                    self.lock.access(self.access);
                }
                if !self.config.is_queue() {
                    ctx.record(Event::Request {
                        client: Self::me(ctx),
                    });
                }
                self.phase = Phase::Acquiring;
                if self.config.count_herd {
                    ctx.observe(Observation::Count(ACQUISITIONS));
                }
                let signal = self.lock.acquire(&mut LockEnv::<_, L, S>::new(ctx));
                self.on_signal(ctx, signal);
            }
            (Phase::Claiming { op: 0 }, WorkTimer::Claim { grant }) if self.is_current(grant) => {
                let op = self.send_op(ctx, RequestKind::Claim);
                self.phase = Phase::Claiming { op };
            }
            (Phase::Working, WorkTimer::WorkDone { grant }) if self.is_current(grant) => {
                if self.config.reenter && !self.unnested {
                    // The nested call's work is done: it unlocks and returns, and the outer
                    // section works on.
                    self.phase = Phase::Unnesting;
                    let signal = self.lock.leave(&mut LockEnv::<_, L, S>::new(ctx));
                    self.on_signal(ctx, signal);
                    return;
                }
                ctx.mark("work-done");
                // Each step after a mark is a separate event, so that a pause placed on the
                // mark falls between the two steps, as it can in real code.
                ctx.set_timer(
                    ClockKind::Mono,
                    Dur::ZERO,
                    Timer::Work(WorkTimer::Check { grant }),
                );
            }
            (Phase::Working, WorkTimer::Check { grant }) if self.is_current(grant) => {
                if self.config.check_validity_before_write {
                    if !self.lock.valid(&LockEnv::<_, L, S>::new(ctx)) {
                        // A leader that learns it no longer leads stops as `Exit` does.
                        let restart = self.config.is_leader();
                        self.exit(ctx, ExitReason::Lost, restart);
                        return;
                    }
                    ctx.mark("validity-checked");
                }
                ctx.set_timer(
                    ClockKind::Mono,
                    Dur::ZERO,
                    Timer::Work(WorkTimer::Write { grant }),
                );
            }
            (Phase::Working, WorkTimer::Write { grant }) if self.is_current(grant) => {
                if self.access == Access::Read {
                    // A reader's work is done with what it read: it leaves without writing.
                    self.exit(ctx, ExitReason::Released, false);
                    return;
                }
                let held = self.held.expect("working under a grant");
                let kind = RequestKind::Write {
                    value: held.base + 1,
                    base: held.base,
                };
                let op = self.send_op(ctx, kind);
                self.phase = Phase::Writing { op };
            }
            (
                Phase::Claiming { op } | Phase::Reading { op } | Phase::Writing { op },
                WorkTimer::StorageTimeout { op: o },
            ) if op == o => {
                if self.config.is_leader() {
                    self.end_task(ctx);
                } else {
                    self.exit(ctx, ExitReason::Abandoned, false);
                }
            }
            (Phase::Idle, WorkTimer::Task { grant }) if self.is_current(grant) => {
                self.start_task(ctx);
            }
            (Phase::Job { job }, WorkTimer::JobDone { job: j }) if j == job => {
                ctx.record(Event::Done {
                    job,
                    client: Self::me(ctx),
                });
                ctx.mark("work-done");
                // The commit is a step of its own: a pause on `work-done` falls between the
                // job's effect and its commit.
                ctx.set_timer(
                    ClockKind::Mono,
                    Dur::ZERO,
                    Timer::Work(WorkTimer::JobCommit { job }),
                );
            }
            (Phase::Job { job }, WorkTimer::JobCommit { job: j }) if j == job => {
                self.phase = Phase::Releasing { restart: false };
                let signal = self.lock.release(&mut LockEnv::<_, L, S>::new(ctx));
                self.on_signal(ctx, signal);
            }
            (
                Phase::Claiming { .. }
                | Phase::Reading { .. }
                | Phase::Working
                | Phase::Writing { .. }
                | Phase::Idle,
                WorkTimer::StopLeading { grant },
            ) if self.is_current(grant) => {
                // The work noticed the cancelled context: the term ends, same process.
                self.exit(ctx, ExitReason::Lost, false);
            }
            _ => {} // A timer of a phase or grant the client has left.
        }
    }

    fn is_current(&self, grant: u32) -> bool {
        self.held.is_some_and(|h| h.id.seq == grant)
    }

    /// What the lock client said, if anything.
    pub(crate) fn on_signal<S>(
        &mut self,
        ctx: &mut impl ClientEnv<L, S>,
        signal: Option<LockSignal>,
    ) {
        let Some(signal) = signal else { return };
        match (self.phase, signal) {
            // The answer of a resource the lock service keeps, in any phase: a late one is
            // ignored as storage's would be.
            (_, LockSignal::Resource(reply)) => self.on_storage_reply(ctx, reply),
            (Phase::Nesting, LockSignal::Granted { .. }) => {
                ctx.record(Event::Nested {
                    client: Self::me(ctx),
                });
                self.nest_held = true;
                if self.terminating {
                    self.exit(ctx, ExitReason::Terminated, false);
                    return;
                }
                self.start_work(ctx);
            }
            // The nested call failed: its exception ends the critical section.
            (Phase::Nesting, LockSignal::AcquireFailed) => {
                self.exit(ctx, ExitReason::Abandoned, false);
            }
            (Phase::Unnesting, LockSignal::Released) => {
                self.nest_held = false;
                if self.terminating {
                    self.exit(ctx, ExitReason::Terminated, false);
                    return;
                }
                self.unnested = true;
                self.start_work(ctx);
            }
            (Phase::Acquiring, LockSignal::Granted { token, ticket }) => {
                self.grants += 1;
                let id = GrantId {
                    client: Self::me(ctx),
                    seq: self.grants,
                };
                ctx.record(Event::Grant {
                    grant: id,
                    token,
                    ticket,
                });
                ctx.mark("granted");
                // Only a scheduled job's hold reads the grant's time.
                let at = match self.config.kind {
                    WorkloadKind::Cron(_) => ctx.mono(),
                    _ => LocalTime::default(),
                };
                self.held = Some(Held {
                    id,
                    token,
                    base: 0,
                    at,
                });
                self.lost = false;
                if self.terminating {
                    self.exit(ctx, ExitReason::Terminated, false);
                    return;
                }
                if self.claim {
                    // A step of its own, so a pause on `granted` lands before the claim.
                    self.phase = Phase::Claiming { op: 0 };
                    let grant = id.seq;
                    ctx.set_timer(
                        ClockKind::Mono,
                        Dur::ZERO,
                        Timer::Work(WorkTimer::Claim { grant }),
                    );
                } else {
                    let op = self.send_op(ctx, RequestKind::Read);
                    self.phase = Phase::Reading { op };
                }
            }
            (Phase::Acquiring, LockSignal::Job(job)) => {
                ctx.record(Event::Dequeued {
                    job,
                    client: Self::me(ctx),
                });
                ctx.mark("granted");
                self.phase = Phase::Job { job };
                let work = self.config.work.sample(ctx.rng());
                ctx.set_timer(
                    ClockKind::Mono,
                    work,
                    Timer::Work(WorkTimer::JobDone { job }),
                );
            }
            (Phase::Acquiring, LockSignal::AcquireFailed) => {
                if !self.config.is_queue() {
                    ctx.record(Event::AcquireFailed {
                        client: Self::me(ctx),
                    });
                }
                self.think(ctx);
            }
            // A worker learns nothing of its job's claim until it commits.
            (Phase::Job { .. }, LockSignal::Lost) => {}
            (
                Phase::Claiming { .. }
                | Phase::Reading { .. }
                | Phase::Working
                | Phase::Writing { .. }
                | Phase::Idle,
                LockSignal::Lost,
            ) if self.config.is_leader() => self.stopped_leading(ctx),
            (
                Phase::Claiming { .. }
                | Phase::Reading { .. }
                | Phase::Working
                | Phase::Writing { .. }
                | Phase::Nesting
                | Phase::Unnesting,
                LockSignal::Lost,
            ) => {
                let held = self.held.expect("in a critical section");
                ctx.record(Event::Exit {
                    grant: held.id,
                    why: ExitReason::Lost,
                });
                self.think(ctx);
            }
            (Phase::Unwinding { restart }, LockSignal::Released) => self.release(ctx, restart),
            (Phase::Unwinding { .. }, LockSignal::Lost) => self.think(ctx),
            (Phase::Releasing { restart }, LockSignal::Released) => {
                if restart {
                    // The process exited and starts again: a fresh lock client (a new
                    // elector, which waits out the lease it does not know).
                    self.lock.reset();
                }
                self.think(ctx);
            }
            // Stopped, it has released the lock and listens to its lock client no more.
            (Phase::Stopped, _) => {}
            // A scheduled job done and holding on: a lease lost ends the hold early.
            (Phase::Holding { .. }, LockSignal::Lost) => self.think(ctx),
            (phase, signal) => panic!("workload in {phase:?} got {signal:?}"),
        }
    }

    pub(crate) fn on_storage_reply<S>(
        &mut self,
        ctx: &mut impl ClientEnv<L, S>,
        reply: StorageReply,
    ) {
        match (self.phase, reply.result) {
            (Phase::Reading { op }, StorageResult::Read(value)) if op == reply.op.seq => {
                let held = self.held.as_mut().expect("reading under a grant");
                held.base = value;
                ctx.mark("read-done");
                if self.config.reenter && !self.config.is_leader() {
                    self.unnested = false;
                    ctx.record(Event::Nest {
                        client: Self::me(ctx),
                    });
                    self.phase = Phase::Nesting;
                    let signal = self.lock.reenter(&mut LockEnv::<_, L, S>::new(ctx));
                    self.on_signal(ctx, signal);
                    return;
                }
                self.start_work(ctx);
            }
            (Phase::Claiming { op }, StorageResult::Claimed) if op == reply.op.seq => {
                let read = self.send_op(ctx, RequestKind::Read);
                self.phase = Phase::Reading { op: read };
            }
            (Phase::Writing { op }, StorageResult::Written) if op == reply.op.seq => {
                if self.config.is_leader() {
                    self.end_task(ctx);
                } else {
                    self.exit(ctx, ExitReason::Released, false);
                }
            }
            (
                Phase::Claiming { op } | Phase::Reading { op } | Phase::Writing { op },
                StorageResult::Rejected,
            ) if op == reply.op.seq => {
                if self.config.is_leader() {
                    // A failed task; the term goes on.
                    self.end_task(ctx);
                } else {
                    self.exit(ctx, ExitReason::Abandoned, false);
                }
            }
            _ => {} // A late reply to an operation the client gave up on.
        }
    }

    /// Starts the work of the critical section.
    fn start_work<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        let grant = self.held.expect("working under a grant").id.seq;
        self.phase = Phase::Working;
        let work = self.config.work.sample(ctx.rng());
        ctx.set_timer(
            ClockKind::Mono,
            work,
            Timer::Work(WorkTimer::WorkDone { grant }),
        );
    }

    /// The leader's lock client said leadership is lost: what the application does.
    fn stopped_leading<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        let WorkloadKind::Leader(leader) = &self.config.kind else {
            unreachable!("only a leader stops leading");
        };
        if self.lost {
            return; // It already knows, and goes on acting anyway.
        }
        match &leader.on_stopped_leading {
            OnStoppedLeading::Exit => self.exit(ctx, ExitReason::Lost, true),
            OnStoppedLeading::Cancel { stop_delay } => {
                self.lost = true;
                let delay = stop_delay.sample(ctx.rng());
                let grant = self.held.expect("leading").id.seq;
                ctx.set_timer(
                    ClockKind::Mono,
                    delay,
                    Timer::Work(WorkTimer::StopLeading { grant }),
                );
            }
            OnStoppedLeading::Ignore => self.lost = true,
        }
    }

    /// A leader starts a task: claim (compare-and-set storage) or read.
    fn start_task<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        if self.claim {
            let op = self.send_op(ctx, RequestKind::Claim);
            self.phase = Phase::Claiming { op };
        } else {
            let op = self.send_op(ctx, RequestKind::Read);
            self.phase = Phase::Reading { op };
        }
    }

    /// A leader's task is over (written, rejected or timed out): the next one comes after
    /// `task_every`.
    fn end_task<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        let WorkloadKind::Leader(leader) = &self.config.kind else {
            unreachable!("only a leader has tasks");
        };
        self.phase = Phase::Idle;
        let every = leader.task_every.sample(ctx.rng());
        let grant = self.held.expect("leading").id.seq;
        ctx.set_timer(
            ClockKind::Mono,
            every,
            Timer::Work(WorkTimer::Task { grant }),
        );
    }

    /// Leaves the critical section: records the exit, then releases the lock; `restart`: the
    /// process exits, so the lock client then starts afresh. A scheduled job whose work ended
    /// (done or abandoned) holds the lock until `lock_at_least` has passed since the grant.
    fn exit<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, why: ExitReason, restart: bool) {
        let held = self.held.take().expect("exit from a critical section");
        self.lost = false;
        ctx.record(Event::Exit {
            grant: held.id,
            why,
        });
        if let WorkloadKind::Cron(cron) = &self.config.kind {
            let left = (held.at + cron.lock_at_least).saturating_since(ctx.mono());
            if matches!(why, ExitReason::Released | ExitReason::Abandoned) && left > Dur::ZERO {
                let grant = held.id.seq;
                self.phase = Phase::Holding { grant };
                ctx.set_timer(
                    ClockKind::Mono,
                    left,
                    Timer::Work(WorkTimer::Unlock { grant }),
                );
                return;
            }
        }
        self.release(ctx, restart);
    }

    fn release<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, restart: bool) {
        if self.nest_held {
            self.nest_held = false;
            self.phase = Phase::Unwinding { restart };
            let signal = self.lock.leave(&mut LockEnv::<_, L, S>::new(ctx));
            self.on_signal(ctx, signal);
            return;
        }
        self.phase = Phase::Releasing { restart };
        let signal = self.lock.release(&mut LockEnv::<_, L, S>::new(ctx));
        self.on_signal(ctx, signal);
    }

    fn send_op<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, kind: RequestKind) -> u32 {
        let held = self.held.expect("storage ops only under a grant");
        self.ops += 1;
        let op = OpId {
            client: Self::me(ctx),
            seq: self.ops,
        };
        let req = StorageRequest {
            op,
            grant: held.id,
            token: held.token,
            kind,
        };
        match &self.place {
            Place::Node(storage) if self.config.keys().is_some() => {
                ctx.send(*storage, Msg::StorageRow(Box::new((self.row, req))));
            }
            Place::Node(storage) => ctx.send(*storage, Msg::Storage(req)),
            Place::Service(resource) => {
                self.lock
                    .resource_op(&mut LockEnv::<_, L, S>::new(ctx), resource, req);
            }
        }
        let timeout = Timer::Work(WorkTimer::StorageTimeout { op: self.ops });
        ctx.set_timer(ClockKind::Mono, self.config.storage_timeout, timeout);
        self.ops
    }
}
