//! The protected resource kept in etcd itself (J4 in docs/catalogue.md; etcd's `why.md`).
//!
//! The counter lives under the key [`RESOURCE_KEY`]. A read is a linearizable `Get` of it; a
//! write is a transaction whose compares are the guard on the writer's own lock key and whose
//! success branch is `Put(resource, value)`. Which guard is the question of J4:
//!
//! - [`ResourceGuard::None`]: no compare; every write lands.
//! - [`ResourceGuard::KeyExists`]: `Version(myKey) > 0`, Jepsen's `lock-etcd-set`: the lock
//!   key still exists. The key's name is the session's (prefix + lease id), so a client that
//!   released and queued again with the same session passes it with a stale write.
//! - [`ResourceGuard::Owner`]: `CreateRevision(myKey) == myRev`, the Mutex's `IsOwner()`: the
//!   very key that was granted still exists, so the write is in the lock's own order.
//!
//! The member that applies a write (the one that proposed it) or serves a read records the
//! operation in the history as storage does ([`crate::storage`]): accepted when the guard
//! held, rejected otherwise.

use lockstep_check::{OpKind, OpOutcome};

use super::mvcc::{Cmp, Compare, Op, OpResult, Range, Rev, Target, Txn, TxnResult};
use crate::storage::{RequestKind, StorageResult};

/// The key the resource lives under.
pub const RESOURCE_KEY: &str = "resource";

/// What a write to the resource is guarded by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceGuard {
    /// No compare.
    None,
    /// `Version(myKey) > 0`: the writer's lock key exists.
    KeyExists,
    /// `CreateRevision(myKey) == myRev`: the writer's lock key is the one it was granted.
    Owner,
}

impl ResourceGuard {
    /// The compares of a write by the holder of `key`, granted at create revision `my_rev`.
    pub fn compares(self, key: &str, my_rev: Rev) -> Vec<Compare> {
        match self {
            ResourceGuard::None => vec![],
            ResourceGuard::KeyExists => vec![Compare {
                key: key.to_string(),
                target: Target::Version,
                cmp: Cmp::Greater,
                value: 0,
            }],
            ResourceGuard::Owner => vec![Compare {
                key: key.to_string(),
                target: Target::Create,
                cmp: Cmp::Equal,
                value: my_rev,
            }],
        }
    }
}

/// The transaction of one operation: a read is a lone `Get`, which a member serves as a
/// linearizable read; a write is `If(compares) Then(Put(resource, value))`.
///
/// # Panics
/// On a claim: compare-and-set storage has no etcd form (the scenario loader rejects it).
pub fn txn(kind: RequestKind, compares: Vec<Compare>) -> Txn {
    match kind {
        RequestKind::Read => Txn {
            compares: vec![],
            success: vec![Op::Get(Range::key(RESOURCE_KEY))],
            failure: vec![],
        },
        RequestKind::Write { value, .. } => Txn {
            compares,
            success: vec![Op::Put {
                key: RESOURCE_KEY.to_string(),
                value,
                lease: None,
            }],
            failure: vec![],
        },
        RequestKind::Claim => panic!("an etcd-resident resource takes no claims"),
    }
}

/// What the history records and the client is told for an operation of `kind` whose
/// transaction gave `result`.
pub fn outcome(kind: RequestKind, result: &TxnResult) -> (OpKind, OpOutcome, StorageResult) {
    match kind {
        RequestKind::Read => {
            let value = match result.results.first() {
                Some(OpResult::Get(kvs)) => kvs.first().map_or(0, |kv| kv.value),
                _ => 0,
            };
            (
                OpKind::Read { value },
                OpOutcome::Accepted,
                StorageResult::Read(value),
            )
        }
        RequestKind::Write { value, base } => {
            let (outcome, reply) = if result.succeeded {
                (OpOutcome::Accepted, StorageResult::Written)
            } else {
                (OpOutcome::Rejected, StorageResult::Rejected)
            };
            (OpKind::Write { value, base }, outcome, reply)
        }
        RequestKind::Claim => panic!("an etcd-resident resource takes no claims"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::mvcc::Store;
    use super::*;

    fn lock_key(s: &mut Store, key: &str) -> Rev {
        s.txn(&Txn {
            compares: vec![],
            success: vec![Op::Put {
                key: key.into(),
                value: 0,
                lease: None,
            }],
            failure: vec![],
        })
        .revision
    }

    fn write(s: &mut Store, guard: ResourceGuard, key: &str, my_rev: Rev, value: u64) -> bool {
        let kind = RequestKind::Write { value, base: 0 };
        let r = s.txn(&txn(kind, guard.compares(key, my_rev)));
        outcome(kind, &r).1 == OpOutcome::Accepted
    }

    #[test]
    fn a_key_recreated_under_the_same_name_passes_key_exists_but_not_owner() {
        for (guard, stale_lands) in [
            (ResourceGuard::None, true),
            (ResourceGuard::KeyExists, true),
            (ResourceGuard::Owner, false),
        ] {
            let mut s = Store::new();
            let old = lock_key(&mut s, "lock/7");
            assert!(write(&mut s, guard, "lock/7", old, 1), "{guard:?}");
            s.txn(&Txn {
                compares: vec![],
                success: vec![Op::Delete {
                    key: "lock/7".into(),
                }],
                failure: vec![],
            });
            let new = lock_key(&mut s, "lock/7");
            assert_ne!(old, new);
            assert_eq!(
                write(&mut s, guard, "lock/7", old, 2),
                stale_lands,
                "{guard:?}"
            );
            assert!(write(&mut s, guard, "lock/7", new, 3), "{guard:?}");
        }
    }

    #[test]
    fn a_missing_key_fails_both_guards_and_reads_see_zero() {
        let mut s = Store::new();
        assert!(!write(&mut s, ResourceGuard::KeyExists, "lock/1", 2, 1));
        assert!(!write(&mut s, ResourceGuard::Owner, "lock/1", 2, 1));
        assert!(write(&mut s, ResourceGuard::None, "lock/1", 2, 5));
        let r = s.txn(&txn(RequestKind::Read, vec![]));
        assert_eq!(outcome(RequestKind::Read, &r).2, StorageResult::Read(5));
        let empty = Store::new().txn(&txn(RequestKind::Read, vec![]));
        assert_eq!(outcome(RequestKind::Read, &empty).2, StorageResult::Read(0));
    }
}
