//! A builder for hand-written histories, so each test reads as the sequence of events it
//! judges.
//!
//! Times are in milliseconds of true time; processes are `client-1`, `client-2`, `client-3`
//! and `storage`. Storage ops default to accepted, without a token; `token` and `rejected`
//! change the op just added.

use lockstep_check::{
    Event, ExitReason, Fault, FaultKind, GrantId, History, NodeId, OpId, OpKind, OpOutcome,
    Options, StorageOp, Verdict, check,
};

pub(crate) const C1: NodeId = NodeId(0);
pub(crate) const C2: NodeId = NodeId(1);
pub(crate) const C3: NodeId = NodeId(2);

/// Milliseconds as nanoseconds.
pub(crate) fn ms(time_ms: u64) -> u64 {
    time_ms * 1_000_000
}

/// The `seq`-th grant of `client`.
pub(crate) fn grant(client: NodeId, seq: u32) -> GrantId {
    GrantId { client, seq }
}

/// The `seq`-th op of `client`.
pub(crate) fn op(client: NodeId, seq: u32) -> OpId {
    OpId { client, seq }
}

/// Checks with default options; the history must be well formed.
pub(crate) fn verdict(history: &History) -> Verdict {
    check(history, &Options::default()).expect("the test history is well formed")
}

/// Checks with `options`; the history must be well formed.
pub(crate) fn verdict_with(history: &History, options: &Options) -> Verdict {
    check(history, options).expect("the test history is well formed")
}

/// Starts a complete history.
pub(crate) fn history() -> Builder {
    let names = ["client-1", "client-2", "client-3", "storage"];
    let names = names.iter().map(|name| name.to_string()).collect();
    Builder {
        history: History {
            names,
            complete: true,
            ..History::default()
        },
    }
}

pub(crate) struct Builder {
    history: History,
}

impl Builder {
    fn push(mut self, at_ms: u64, event: Event) -> Self {
        self.history.push(ms(at_ms), event);
        self
    }

    pub(crate) fn request(self, at_ms: u64, client: NodeId) -> Self {
        self.push(at_ms, Event::Request { client })
    }

    pub(crate) fn acquire_failed(self, at_ms: u64, client: NodeId) -> Self {
        self.push(at_ms, Event::AcquireFailed { client })
    }

    /// A grant without a fencing token.
    pub(crate) fn grant(self, at_ms: u64, client: NodeId, seq: u32) -> Self {
        self.push(
            at_ms,
            Event::Grant {
                grant: grant(client, seq),
                token: None,
                ticket: None,
            },
        )
    }

    pub(crate) fn grant_token(self, at_ms: u64, client: NodeId, seq: u32, token: u64) -> Self {
        self.push(
            at_ms,
            Event::Grant {
                grant: grant(client, seq),
                token: Some(token),
                ticket: None,
            },
        )
    }

    /// The service made `client` the owner under `ticket`.
    pub(crate) fn issued(self, at_ms: u64, client: NodeId, ticket: u64) -> Self {
        self.push(at_ms, Event::Issued { client, ticket })
    }

    /// Names the service's ticket on the grant just added.
    pub(crate) fn ticket(mut self, ticket: u64) -> Self {
        match self
            .history
            .entries
            .last_mut()
            .map(|entry| &mut entry.event)
        {
            Some(Event::Grant { ticket: t, .. }) => *t = Some(ticket),
            _ => panic!("ticket() names the ticket of the grant just added"),
        }
        self
    }

    /// An exit after releasing the lock.
    pub(crate) fn release(self, at_ms: u64, client: NodeId, seq: u32) -> Self {
        self.exit(at_ms, client, seq, ExitReason::Released)
    }

    pub(crate) fn exit(self, at_ms: u64, client: NodeId, seq: u32, why: ExitReason) -> Self {
        self.push(
            at_ms,
            Event::Exit {
                grant: grant(client, seq),
                why,
            },
        )
    }

    /// Op `op_seq` of `client` under its grant `grant_seq`: a write of `base + 1`.
    pub(crate) fn write(
        self,
        at_ms: u64,
        client: NodeId,
        op_seq: u32,
        grant_seq: u32,
        base: u64,
    ) -> Self {
        let kind = OpKind::Write {
            value: base + 1,
            base,
        };
        self.storage(at_ms, client, op_seq, grant_seq, kind)
    }

    /// Op `op_seq` of `client` under its grant `grant_seq`: a read that returned `value`.
    pub(crate) fn read(
        self,
        at_ms: u64,
        client: NodeId,
        op_seq: u32,
        grant_seq: u32,
        value: u64,
    ) -> Self {
        self.storage(at_ms, client, op_seq, grant_seq, OpKind::Read { value })
    }

    fn storage(
        self,
        at_ms: u64,
        client: NodeId,
        op_seq: u32,
        grant_seq: u32,
        kind: OpKind,
    ) -> Self {
        let op = StorageOp {
            op: op(client, op_seq),
            grant: grant(client, grant_seq),
            kind,
            token: None,
            outcome: OpOutcome::Accepted,
        };
        self.push(at_ms, Event::Storage(op))
    }

    /// Sets the fencing token of the storage op just added.
    pub(crate) fn token(mut self, token: u64) -> Self {
        self.last_op().token = Some(token);
        self
    }

    /// Marks the storage op just added as rejected by fencing.
    pub(crate) fn rejected(mut self) -> Self {
        self.last_op().outcome = OpOutcome::Rejected;
        self
    }

    fn last_op(&mut self) -> &mut StorageOp {
        match self
            .history
            .entries
            .last_mut()
            .map(|entry| &mut entry.event)
        {
            Some(Event::Storage(op)) => op,
            _ => panic!("token() and rejected() change the storage op just added"),
        }
    }

    pub(crate) fn fault(self, at_ms: u64, kind: FaultKind, nodes: &[NodeId]) -> Self {
        let detail = format!("{kind:?} of {nodes:?}");
        self.push(
            at_ms,
            Event::Fault(Fault {
                kind,
                nodes: nodes.to_vec(),
                detail,
            }),
        )
    }

    pub(crate) fn pause(self, at_ms: u64, node: NodeId) -> Self {
        self.fault(at_ms, FaultKind::Pause, &[node])
    }

    pub(crate) fn resume(self, at_ms: u64, node: NodeId) -> Self {
        self.fault(at_ms, FaultKind::Resume, &[node])
    }

    pub(crate) fn crash(self, at_ms: u64, node: NodeId) -> Self {
        self.fault(at_ms, FaultKind::Crash, &[node])
    }

    pub(crate) fn enqueued(self, at_ms: u64, job: u64) -> Self {
        self.push(at_ms, Event::Enqueued { job })
    }

    pub(crate) fn dequeued(self, at_ms: u64, client: NodeId, job: u64) -> Self {
        self.push(at_ms, Event::Dequeued { job, client })
    }

    pub(crate) fn done(self, at_ms: u64, client: NodeId, job: u64) -> Self {
        self.push(at_ms, Event::Done { job, client })
    }

    /// `client`'s next request is for the lock shared (a reader's).
    pub(crate) fn shared(self, at_ms: u64, client: NodeId) -> Self {
        self.push(at_ms, Event::Shared { client })
    }

    /// `client`, holding the lock, takes it again.
    pub(crate) fn nest(self, at_ms: u64, client: NodeId) -> Self {
        self.push(at_ms, Event::Nest { client })
    }

    /// `client`'s nested acquisition holds the lock again.
    pub(crate) fn nested(self, at_ms: u64, client: NodeId) -> Self {
        self.push(at_ms, Event::Nested { client })
    }

    /// `client` picked `resource` under `lock` for its next request.
    pub(crate) fn pick(self, at_ms: u64, client: NodeId, lock: u64, resource: u64) -> Self {
        self.push(
            at_ms,
            Event::Pick {
                client,
                lock,
                resource,
            },
        )
    }

    pub(crate) fn due(self, at_ms: u64, client: NodeId, tick: u64) -> Self {
        self.push(at_ms, Event::Due { tick, client })
    }

    /// The run hit its event bound before its planned end.
    pub(crate) fn incomplete(mut self) -> Self {
        self.history.complete = false;
        self
    }

    /// Ends the run at `at_ms`.
    pub(crate) fn end(mut self, at_ms: u64) -> History {
        self.history.end_ns = ms(at_ms);
        self.history
    }
}

/// Kleppmann's K1 and K2 (docs/catalogue.md): client-1 gets token 33, reads 0 and pauses past
/// its lease; client-2 gets token 34 at 12 ms, reads 0, writes 1 and releases; client-1 resumes
/// and writes 1 with token 33, which `fenced` storage rejects.
pub(crate) fn gc_pause_after_read(fenced: bool) -> History {
    let late_write = history()
        .request(0, C1)
        .grant_token(1, C1, 1, 33)
        .read(2, C1, 1, 1, 0)
        .token(33)
        .pause(3, C1)
        .request(5, C2)
        .grant_token(12, C2, 1, 34)
        .read(13, C2, 1, 1, 0)
        .token(34)
        .write(14, C2, 2, 1, 0)
        .token(34)
        .release(15, C2, 1)
        .resume(17, C1)
        .write(18, C1, 2, 1, 0)
        .token(33);
    // Rejected by fencing, client-1 abandons its critical section; accepted, it releases.
    let (late_write, why) = match fenced {
        true => (late_write.rejected(), ExitReason::Abandoned),
        false => (late_write, ExitReason::Released),
    };
    late_write.exit(19, C1, 1, why).end(20)
}
