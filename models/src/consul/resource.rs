//! The protected resource kept in Consul's KV store itself, beside the lock key
//! (docs/families/consul.md, "Storage in Consul"; `[storage] mode = "consul"`).
//!
//! A read is `GET /v1/kv/resource`, served by the leader from its applied state (the default
//! consistency mode). A write is a transaction (`PUT /v1/txn`) whose first operation guards
//! it on the lock key and whose second sets the resource; a failed check fails the whole
//! transaction (`agent/consul/state/txn.go`). Which check is the question:
//!
//! - [`ResourceGuard::None`]: a plain `set`; every write lands.
//! - [`ResourceGuard::CheckSession`]: `check-session` on the lock key with the writer's
//!   session: "fails the transaction if Key is not currently locked by Session"
//!   (`kvsCheckSessionTxn`).
//! - [`ResourceGuard::CheckIndex`]: `check-index` on the lock key with the `ModifyIndex` the
//!   writer's acquisition gave it: "fails the transaction if Key was modified since the given
//!   ModifyIndex" (`kvsCheckIndexTxn`; a missing key fails it too).
//!
//! The check runs as the servers apply the transaction, in the log's order, so it sees every
//! acquisition and invalidation that came before: the guard is exact, whatever the writer
//! believes. Every server that applies a write records it as storage does
//! ([`crate::storage`]; the history keeps the first record of an operation): accepted when
//! the check held, rejected otherwise.

use lockstep_check::{OpKind, OpOutcome};

use super::SessionId;
use super::server::Kv;
use crate::storage::{RequestKind, StorageResult};

/// What a write to the resource is guarded by (`[storage] guard`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ResourceGuard {
    /// A plain `set`.
    #[default]
    None,
    /// `check-session`: the lock key is held by the writer's session.
    CheckSession,
    /// `check-index`: the lock key is unchanged since the writer's acquisition.
    CheckIndex,
}

/// The check a write carries, with the writer's own values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnCheck {
    /// No check.
    None,
    /// `check-session` with this session.
    Session(SessionId),
    /// `check-index` with this `ModifyIndex`.
    Index(u64),
}

impl ResourceGuard {
    /// The check of a write by the holder of `session`, whose acquisition left the lock key at
    /// `modify_index`.
    pub fn check(self, session: SessionId, modify_index: u64) -> TxnCheck {
        match self {
            ResourceGuard::None => TxnCheck::None,
            ResourceGuard::CheckSession => TxnCheck::Session(session),
            ResourceGuard::CheckIndex => TxnCheck::Index(modify_index),
        }
    }
}

impl TxnCheck {
    /// Whether the check holds against the lock key as applied.
    pub fn holds(self, key: Option<Kv>) -> bool {
        match self {
            TxnCheck::None => true,
            TxnCheck::Session(s) => key.is_some_and(|k| k.session == Some(s)),
            TxnCheck::Index(i) => key.is_some_and(|k| k.modify_index == i),
        }
    }
}

/// What the history records and the client is told for an operation of `kind` on a resource
/// holding `value`, the write's check having held or not (`None` for a read). Returns the new
/// value too.
///
/// # Panics
/// On a claim: compare-and-set storage has no Consul form (the scenario loader rejects it).
pub fn apply(
    kind: RequestKind,
    value: u64,
    held: Option<bool>,
) -> (OpKind, OpOutcome, StorageResult, u64) {
    match kind {
        RequestKind::Read => (
            OpKind::Read { value },
            OpOutcome::Accepted,
            StorageResult::Read(value),
            value,
        ),
        RequestKind::Write { value: new, base } => {
            let kind = OpKind::Write { value: new, base };
            if held.unwrap_or(true) {
                (kind, OpOutcome::Accepted, StorageResult::Written, new)
            } else {
                (kind, OpOutcome::Rejected, StorageResult::Rejected, value)
            }
        }
        RequestKind::Claim => panic!("a Consul-resident resource takes no claims"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(session: Option<SessionId>, modify_index: u64) -> Option<Kv> {
        Some(Kv {
            session,
            lock_index: 1,
            create_index: 1,
            modify_index,
        })
    }

    #[test]
    fn check_session_holds_while_the_session_holds_the_key_and_check_index_while_unchanged() {
        let mine = key(Some(7), 10);
        for (guard, on_mine, released, retaken_by_me, taken, gone) in [
            (ResourceGuard::None, true, true, true, true, true),
            (ResourceGuard::CheckSession, true, false, true, false, false),
            (ResourceGuard::CheckIndex, true, false, false, false, false),
        ] {
            let c = guard.check(7, 10);
            assert_eq!(c.holds(mine), on_mine, "{guard:?}");
            assert_eq!(c.holds(key(None, 12)), released, "{guard:?}");
            // The same session took the key again: a later acquisition, the same session.
            assert_eq!(c.holds(key(Some(7), 14)), retaken_by_me, "{guard:?}");
            assert_eq!(c.holds(key(Some(8), 14)), taken, "{guard:?}");
            assert_eq!(c.holds(None), gone, "{guard:?}");
        }
    }

    #[test]
    fn a_failed_check_leaves_the_value_and_reads_see_it() {
        let w = RequestKind::Write { value: 5, base: 4 };
        assert_eq!(apply(w, 4, Some(true)).3, 5);
        let (_, outcome, result, value) = apply(w, 4, Some(false));
        assert_eq!(
            (outcome, result, value),
            (OpOutcome::Rejected, StorageResult::Rejected, 4)
        );
        assert_eq!(apply(RequestKind::Read, 4, None).2, StorageResult::Read(4));
    }
}
