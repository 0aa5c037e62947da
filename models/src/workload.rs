//! The workload client shared by every lock family: acquire -> read storage -> work for a
//! drawn duration -> optionally check the lease is still valid -> write `value + 1` with the
//! fencing token -> release, then think and start again.
//!
//! It records the history the checker judges: `Request`, `Grant`, `AcquireFailed`, `Exit`.
//! It reaches named marks where real code could be interrupted, so a scenario can pause the
//! client at the worst moment: `granted` (the read is already sent), `read-done`, `work-done`
//! (before the validity check) and `validity-checked` (only when it checks, right before the
//! write). The steps after `work-done` and `validity-checked` run as separate events, the gaps
//! a GC pause can fall into (failure catalogue K1).
//!
//! Against compare-and-set storage the client first claims the resource with its token, in a
//! step of its own after `granted`, then reads, works and writes as above (failure catalogue
//! K7).
//!
//! When the resource lives in etcd (failure catalogue J4) the loop is the same; its operations
//! go out through the lock client instead of to a storage node, and the etcd member answers
//! with the same replies.

use lockstep_check::{Event, ExitReason, GrantId, NodeId as HistNode, OpId};
use lockstep_sim::{ClockKind, Distribution, Dur, Env, NodeId};

use crate::env::{Host, LockSide, Scoped};
use crate::lock::{LockClient, LockSignal};
use crate::node::{Msg, Timer, WorkTimer};
use crate::storage::{RequestKind, StorageReply, StorageRequest, StorageResult};

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
    Releasing,
}

/// The current grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    id: GrantId,
    token: Option<u64>,
    /// The value read under this grant.
    base: u64,
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
    /// Grants and operations so far. Bookkeeping for the history, kept across crashes so ids
    /// stay unique; no decision reads them.
    grants: u32,
    ops: u32,
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
            grants: 0,
            ops: 0,
        }
    }

    /// Its lock client.
    pub fn lock(&self) -> &L {
        &self.lock
    }

    pub(crate) fn lock_mut(&mut self) -> &mut L {
        &mut self.lock
    }

    /// The same client, claiming the resource after each grant when `claim` is true.
    pub fn claiming(self, claim: bool) -> Client<L> {
        Client { claim, ..self }
    }

    pub(crate) fn on_start<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        self.think(ctx);
    }

    pub(crate) fn on_crash(&mut self) {
        self.phase = Phase::Thinking;
        self.held = None;
        self.lock.reset();
    }

    fn me(ctx: &impl Env) -> HistNode {
        HistNode(ctx.id().0)
    }

    fn think<S>(&mut self, ctx: &mut impl ClientEnv<L, S>) {
        self.phase = Phase::Thinking;
        self.held = None;
        let delay = self.config.think.sample(ctx.rng());
        ctx.set_timer(ClockKind::Mono, delay, Timer::Work(WorkTimer::Think));
    }

    pub(crate) fn on_work_timer<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, timer: WorkTimer) {
        match (self.phase, timer) {
            (Phase::Thinking, WorkTimer::Think) => {
                ctx.record(Event::Request {
                    client: Self::me(ctx),
                });
                self.phase = Phase::Acquiring;
                let signal = self.lock.acquire(&mut LockEnv::<_, L, S>::new(ctx));
                self.on_signal(ctx, signal);
            }
            (Phase::Claiming { op: 0 }, WorkTimer::Claim { grant }) if self.is_current(grant) => {
                let op = self.send_op(ctx, RequestKind::Claim);
                self.phase = Phase::Claiming { op };
            }
            (Phase::Working, WorkTimer::WorkDone { grant }) if self.is_current(grant) => {
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
                        self.exit(ctx, ExitReason::Lost);
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
                self.exit(ctx, ExitReason::Abandoned);
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
                self.held = Some(Held { id, token, base: 0 });
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
            (Phase::Acquiring, LockSignal::AcquireFailed) => {
                ctx.record(Event::AcquireFailed {
                    client: Self::me(ctx),
                });
                self.think(ctx);
            }
            (
                Phase::Claiming { .. }
                | Phase::Reading { .. }
                | Phase::Working
                | Phase::Writing { .. },
                LockSignal::Lost,
            ) => {
                let held = self.held.expect("in a critical section");
                ctx.record(Event::Exit {
                    grant: held.id,
                    why: ExitReason::Lost,
                });
                self.think(ctx);
            }
            (Phase::Releasing, LockSignal::Released) => self.think(ctx),
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
                let grant = held.id.seq;
                ctx.mark("read-done");
                self.phase = Phase::Working;
                let work = self.config.work.sample(ctx.rng());
                ctx.set_timer(
                    ClockKind::Mono,
                    work,
                    Timer::Work(WorkTimer::WorkDone { grant }),
                );
            }
            (Phase::Claiming { op }, StorageResult::Claimed) if op == reply.op.seq => {
                let read = self.send_op(ctx, RequestKind::Read);
                self.phase = Phase::Reading { op: read };
            }
            (Phase::Writing { op }, StorageResult::Written) if op == reply.op.seq => {
                self.exit(ctx, ExitReason::Released);
            }
            (
                Phase::Claiming { op } | Phase::Reading { op } | Phase::Writing { op },
                StorageResult::Rejected,
            ) if op == reply.op.seq => {
                self.exit(ctx, ExitReason::Abandoned);
            }
            _ => {} // A late reply to an operation the client gave up on.
        }
    }

    /// Leaves the critical section: records the exit, then releases the lock.
    fn exit<S>(&mut self, ctx: &mut impl ClientEnv<L, S>, why: ExitReason) {
        let held = self.held.take().expect("exit from a critical section");
        ctx.record(Event::Exit {
            grant: held.id,
            why,
        });
        self.phase = Phase::Releasing;
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
