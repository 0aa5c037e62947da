//! The protected resource: a counter in a storage service that may check fencing tokens.
//!
//! Storage records every operation in the history as it handles it, so duplicated or delayed
//! messages are judged where they really land. In a fenced mode it keeps the highest token it
//! has seen and refuses any operation carrying a lower one (Kleppmann's fencing, failure
//! catalogue K2); it asserts that invariant itself, and the checker re-derives it from the
//! history independently.

use lockstep_check::{Event, GrantId, OpId, OpKind, OpOutcome, StorageOp};
use lockstep_sim::{Ctx, NodeId};

use crate::node::{Msg, Node};

/// How storage treats fencing tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageMode {
    /// No checks: every operation is accepted.
    Unfenced,
    /// Writes with a token below the highest written so far are rejected; reads are not
    /// checked and do not raise the highest token.
    FencedWrites,
    /// Reads and writes are both checked, and both raise the highest token seen.
    FencedAll,
}

/// What a client asks of storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// Read the counter.
    Read,
    /// Write `value`, computed from `base`, the value the grant read.
    Write {
        /// The new value.
        value: u64,
        /// What the client read.
        base: u64,
    },
}

/// An operation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StorageRequest {
    /// The operation's id.
    pub op: OpId,
    /// The grant under which the client acts (bookkeeping for the history only).
    pub grant: GrantId,
    /// The fencing token, if the lock family gives one.
    pub token: Option<u64>,
    /// Read or write.
    pub kind: RequestKind,
}

/// The answer to an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageResult {
    /// The read's value.
    Read(u64),
    /// The write took effect.
    Written,
    /// Fencing refused the operation.
    Rejected,
}

/// A reply to one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StorageReply {
    /// The operation answered.
    pub op: OpId,
    /// What happened.
    pub result: StorageResult,
}

/// The storage process. Its state is durable: a crash loses nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storage {
    mode: StorageMode,
    value: u64,
    highest_token: Option<u64>,
}

impl Storage {
    /// Empty storage (value 0) in the given mode.
    pub fn new(mode: StorageMode) -> Storage {
        Storage {
            mode,
            value: 0,
            highest_token: None,
        }
    }

    /// The counter's value.
    pub fn value(&self) -> u64 {
        self.value
    }

    pub(crate) fn on_request(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
        from: NodeId,
        req: StorageRequest,
    ) {
        let checked = match (self.mode, req.kind) {
            (StorageMode::Unfenced, _) | (StorageMode::FencedWrites, RequestKind::Read) => false,
            (StorageMode::FencedWrites, RequestKind::Write { .. })
            | (StorageMode::FencedAll, _) => true,
        };
        let accepted = !checked || self.admits(req.token);
        if accepted && checked {
            let token = req.token.expect("admitted with a token");
            self.highest_token = Some(self.highest_token.map_or(token, |h| h.max(token)));
        }
        let (kind, result) = match (req.kind, accepted) {
            (RequestKind::Read, true) => (
                OpKind::Read { value: self.value },
                StorageResult::Read(self.value),
            ),
            (RequestKind::Read, false) => {
                (OpKind::Read { value: self.value }, StorageResult::Rejected)
            }
            (RequestKind::Write { value, base }, true) => {
                self.value = value;
                (OpKind::Write { value, base }, StorageResult::Written)
            }
            (RequestKind::Write { value, base }, false) => {
                (OpKind::Write { value, base }, StorageResult::Rejected)
            }
        };
        let outcome = if accepted {
            OpOutcome::Accepted
        } else {
            OpOutcome::Rejected
        };
        ctx.record(Event::Storage(StorageOp {
            op: req.op,
            grant: req.grant,
            kind,
            token: req.token,
            outcome,
        }));
        ctx.send(from, Msg::StorageReply(StorageReply { op: req.op, result }));
        if checked && accepted {
            // Paired assertion: an admitted token is the highest seen, never below it. The
            // checker re-derives the same property from the history.
            assert_eq!(
                self.highest_token, req.token,
                "fenced storage accepted a stale token"
            );
        }
    }

    /// A fenced check: an operation without a token cannot be admitted, one with a token is
    /// admitted unless a higher token was seen.
    fn admits(&self, token: Option<u64>) -> bool {
        match (token, self.highest_token) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(t), Some(h)) => t >= h,
        }
    }
}
