//! The protected resource: a counter in a storage service that may check fencing tokens.
//!
//! Storage records every operation in the history as it handles it, so duplicated or delayed
//! messages are judged where they really land. In a fenced mode it keeps the highest token it
//! has seen and refuses any operation carrying a lower one (Kleppmann's fencing, failure
//! catalogue K2); it asserts that invariant itself, and the checker re-derives it from the
//! history independently.
//!
//! The compare-and-set mode is antirez's alternative for locks without ordered tokens: the
//! holder first claims the resource with its random token, and its write is accepted only if
//! that token is still the owner (K7 in docs/catalogue.md). It orders writes by who claimed
//! last, not by who was granted last.

use std::collections::BTreeMap;

use lockstep_check::{Event, GrantId, OpId, OpKind, OpOutcome, StorageOp};
use lockstep_sim::NodeId;

use crate::env::Host;
use crate::node::Msg;

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
    /// A claim makes the operation's token the owner, unconditionally; a write is accepted
    /// only if its token is the owner; reads are not checked.
    CasToken,
}

impl StorageMode {
    /// Every mode, by its name in scenario files.
    pub const ALL: [(&'static str, StorageMode); 4] = [
        ("unfenced", StorageMode::Unfenced),
        ("fenced-writes", StorageMode::FencedWrites),
        ("fenced-all", StorageMode::FencedAll),
        ("cas-token", StorageMode::CasToken),
    ];

    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            StorageMode::Unfenced => "unfenced",
            StorageMode::FencedWrites => "fenced-writes",
            StorageMode::FencedAll => "fenced-all",
            StorageMode::CasToken => "cas-token",
        }
    }
}

/// What a client asks of storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// Read the counter.
    Read,
    /// Become the owner (compare-and-set mode).
    Claim,
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
    /// The claim took effect.
    Claimed,
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

/// The storage process: row 0, the counter, and with the `keys` workload any other rows, each
/// with its own value and fencing state (a token is checked against the highest seen on its
/// row). Its state is durable: a crash loses nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storage {
    mode: StorageMode,
    /// Row 0.
    first: Row,
    /// The other rows, created empty when first addressed.
    others: BTreeMap<u64, Row>,
}

/// One row: its value and what fencing has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Row {
    value: u64,
    highest_token: Option<u64>,
    /// The token of the last claim (compare-and-set mode).
    owner: Option<u64>,
}

impl Storage {
    /// Empty storage (value 0) in the given mode.
    pub fn new(mode: StorageMode) -> Storage {
        Storage {
            mode,
            first: Row::default(),
            others: BTreeMap::new(),
        }
    }

    /// Storage in `mode` holding `value`, with no token seen: a replica's copy of a row.
    pub fn with_value(mode: StorageMode, value: u64) -> Storage {
        let mut storage = Storage::new(mode);
        storage.first.value = value;
        storage
    }

    /// The counter's value (row 0).
    pub fn value(&self) -> u64 {
        self.first.value
    }

    pub(crate) fn on_request<M, T>(
        &mut self,
        ctx: &mut impl Host<Msg<M>, T>,
        from: NodeId,
        row: u64,
        req: StorageRequest,
    ) {
        let (kind, result) = self.apply_row(row, req);
        self.answer(ctx, from, &req, kind, result);
    }

    /// Decides one operation on row 0: the operation as the history records it and the
    /// reply. Pure (no host): the simulated storage node and the bridge's storage host
    /// (`lockstep-bridge`) both decide through it, so every fencing mode means one thing.
    pub fn apply(&mut self, req: StorageRequest) -> (OpKind, StorageResult) {
        self.apply_row(0, req)
    }

    /// Decides one operation on row `row`.
    pub fn apply_row(&mut self, row: u64, req: StorageRequest) -> (OpKind, StorageResult) {
        let mode = self.mode;
        let row = match row {
            0 => &mut self.first,
            n => self.others.entry(n).or_default(),
        };
        row.apply(mode, req)
    }
}

impl Row {
    fn apply(&mut self, mode: StorageMode, req: StorageRequest) -> (OpKind, StorageResult) {
        if mode == StorageMode::CasToken {
            return self.apply_cas(req);
        }
        let checked = match (mode, req.kind) {
            (StorageMode::Unfenced | StorageMode::CasToken, _)
            | (StorageMode::FencedWrites, RequestKind::Read | RequestKind::Claim) => false,
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
            (RequestKind::Claim, true) => (OpKind::Claim, StorageResult::Claimed),
            (RequestKind::Claim, false) => (OpKind::Claim, StorageResult::Rejected),
        };
        if checked && accepted {
            // Paired assertion: an admitted token is the highest seen, never below it. The
            // checker re-derives the same property from the history.
            assert_eq!(
                self.highest_token, req.token,
                "fenced storage accepted a stale token"
            );
        }
        (kind, result)
    }

    /// Compare-and-set on the owner's token: claims always take, writes need the claim.
    fn apply_cas(&mut self, req: StorageRequest) -> (OpKind, StorageResult) {
        match req.kind {
            RequestKind::Read => (
                OpKind::Read { value: self.value },
                StorageResult::Read(self.value),
            ),
            RequestKind::Claim => {
                self.owner = req.token;
                (OpKind::Claim, StorageResult::Claimed)
            }
            RequestKind::Write { value, base } => {
                let owns = req.token.is_some() && req.token == self.owner;
                if owns {
                    self.value = value;
                    (OpKind::Write { value, base }, StorageResult::Written)
                } else {
                    (OpKind::Write { value, base }, StorageResult::Rejected)
                }
            }
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

impl Storage {
    /// Records the operation as handled and replies.
    fn answer<M, T>(
        &mut self,
        ctx: &mut impl Host<Msg<M>, T>,
        from: NodeId,
        req: &StorageRequest,
        kind: OpKind,
        result: StorageResult,
    ) {
        let outcome = if result == StorageResult::Rejected {
            OpOutcome::Rejected
        } else {
            OpOutcome::Accepted
        };
        ctx.record(Event::Storage(StorageOp {
            op: req.op,
            grant: req.grant,
            kind,
            token: req.token,
            outcome,
        }));
        ctx.send(from, Msg::StorageReply(StorageReply { op: req.op, result }));
    }
}
