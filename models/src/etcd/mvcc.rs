//! etcd's multi-version key space, as far as locks use it (docs/families/etcd.md).
//!
//! Every key carries `create_revision`, `mod_revision`, `version` and its lease. A global
//! revision increases by one for every transaction that writes; a transaction's writes all
//! share that one revision (`mvcc/kvstore_txn.go`). Deletions and puts are kept as events so
//! that a watch can start from any past revision, as etcd's watchable store replays them
//! (runs are short, so no compaction).

use std::collections::BTreeMap;
use std::ops::Bound;

/// A revision of the whole key space.
pub type Rev = u64;

/// A lease's id.
pub type LeaseId = u64;

/// A stored key with its metadata (`mvccpb.KeyValue`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: u64,
    /// The revision of the transaction that created the key.
    pub create_revision: Rev,
    /// The revision of the last transaction that changed it.
    pub mod_revision: Rev,
    /// How many times it was put since it was created (1 after creation).
    pub version: u64,
    /// The lease it is attached to, if any.
    pub lease: Option<LeaseId>,
}

/// What a comparison looks at (`etcdserverpb.Compare.CompareTarget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `CreateRevision(key)`: 0 when the key does not exist.
    Create,
    /// `ModRevision(key)`: 0 when the key does not exist.
    Mod,
    /// `Version(key)`: 0 when the key does not exist.
    Version,
    /// `Value(key)`: 0 when the key does not exist (values are numbers here).
    Value,
}

/// A comparison's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `<`
    Less,
    /// `>`
    Greater,
}

/// One guard of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Compare {
    /// The key compared.
    pub key: String,
    /// What of it.
    pub target: Target,
    /// How.
    pub cmp: Cmp,
    /// Against what.
    pub value: u64,
}

/// How a range sorts by creation (`clientv3.WithFirstCreate`, `WithLastCreate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CreateOrder {
    /// Oldest first.
    First,
    /// Newest first.
    Last,
}

/// A read: one key, or every key under a prefix.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Range {
    /// The key, or the prefix.
    pub key: String,
    /// Read every key starting with `key`.
    pub prefix: bool,
    /// Sort by creation revision, and keep only the first.
    pub first: Option<CreateOrder>,
    /// Only keys created at or before this revision (`WithMaxCreateRev`).
    pub max_create_rev: Option<Rev>,
}

impl Range {
    /// One key.
    pub fn key(key: impl Into<String>) -> Range {
        Range {
            key: key.into(),
            prefix: false,
            first: None,
            max_create_rev: None,
        }
    }
}

/// One operation of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Create or overwrite a key, attached to a lease or not.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: u64,
        /// The lease to attach it to.
        lease: Option<LeaseId>,
    },
    /// Read.
    Get(Range),
    /// Delete one key.
    Delete {
        /// The key.
        key: String,
    },
}

/// A transaction: if every compare holds, `success`, else `failure`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Txn {
    /// The guards.
    pub compares: Vec<Compare>,
    /// Run when all guards hold.
    pub success: Vec<Op>,
    /// Run otherwise.
    pub failure: Vec<Op>,
}

impl Txn {
    /// The operations that run: `success` if the guards held, else `failure`.
    pub fn branch(&self, succeeded: bool) -> &[Op] {
        if succeeded {
            &self.success
        } else {
            &self.failure
        }
    }
}

/// The result of one operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpResult {
    /// A put took effect.
    Put,
    /// The keys a get found.
    Get(Vec<KeyValue>),
    /// How many keys a delete removed.
    Deleted(u64),
}

/// The result of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TxnResult {
    /// The store's revision after the transaction (the response header's revision).
    pub revision: Rev,
    /// Whether the guards held.
    pub succeeded: bool,
    /// One result per operation run.
    pub results: Vec<OpResult>,
}

/// What happened to a key at a revision (`mvccpb.Event`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// The revision.
    pub revision: Rev,
    /// Put or delete.
    pub kind: EventKind,
    /// The key.
    pub key: String,
}

/// The kind of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Created or changed.
    Put,
    /// Deleted (by a client or by a lease revoke).
    Delete,
}

/// The key space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Store {
    revision: Rev,
    kvs: BTreeMap<String, KeyValue>,
    events: Vec<Event>,
}

impl Store {
    /// An empty store at revision 1, as a fresh etcd reports.
    pub fn new() -> Store {
        Store {
            revision: 1,
            ..Store::default()
        }
    }

    /// The current revision.
    pub fn revision(&self) -> Rev {
        self.revision
    }

    /// A key's current entry.
    pub fn get(&self, key: &str) -> Option<&KeyValue> {
        self.kvs.get(key)
    }

    /// The live key under `prefix` with the lowest create revision (the first creator, as
    /// `Range` with [`CreateOrder::First`] finds it), without cloning: a walk of the keys
    /// under the prefix only.
    pub fn first_created(&self, prefix: &str) -> Option<&KeyValue> {
        self.kvs
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, kv)| kv)
            .min_by_key(|kv| kv.create_revision)
    }

    /// The live keys under `prefix`, by create revision.
    pub fn line(&self, prefix: &str) -> Vec<&KeyValue> {
        let mut line: Vec<&KeyValue> = self
            .kvs
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, kv)| kv)
            .collect();
        line.sort_by_key(|kv| kv.create_revision);
        line
    }

    /// Events on `key` at or after `from`, in order.
    pub fn events_since<'a>(&'a self, key: &'a str, from: Rev) -> impl Iterator<Item = &'a Event> {
        let start = self.events.partition_point(|e| e.revision < from);
        self.events[start..].iter().filter(move |e| e.key == key)
    }

    /// Applies a transaction. Its writes share one new revision; a transaction that writes
    /// nothing leaves the revision alone.
    pub fn txn(&mut self, txn: &Txn) -> TxnResult {
        let succeeded = self.holds_all(&txn.compares);
        self.txn_branch(txn, succeeded)
    }

    /// [`Store::txn`] with its guards already evaluated: `succeeded` must be what
    /// [`Store::holds_all`] says of `txn.compares` on this store as it is.
    pub fn txn_branch(&mut self, txn: &Txn, succeeded: bool) -> TxnResult {
        let ops = txn.branch(succeeded);
        let rev = self.write_revision(ops);
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            results.push(self.apply(op, rev));
        }
        self.revision = rev;
        TxnResult {
            revision: rev,
            succeeded,
            results,
        }
    }

    /// [`Store::txn_branch`] for a transaction whose result nobody reads (a member applying
    /// another member's proposal): the same writes, events and revision, but its gets are not
    /// run, since they change nothing, and no result is built. Returns the revision
    /// [`TxnResult::revision`] would give.
    pub fn txn_writes(&mut self, txn: &Txn, succeeded: bool) -> Rev {
        let ops = txn.branch(succeeded);
        let rev = self.write_revision(ops);
        for op in ops {
            if !matches!(op, Op::Get(_)) {
                self.apply(op, rev);
            }
        }
        self.revision = rev;
        rev
    }

    /// The revision the operations `ops` of one transaction run at: the next one if any of
    /// them writes, else the current one.
    fn write_revision(&self, ops: &[Op]) -> Rev {
        if ops.iter().any(|op| !matches!(op, Op::Get(_))) {
            self.revision + 1
        } else {
            self.revision
        }
    }

    /// Deletes `keys` in one transaction (a lease revoke): one revision for all.
    pub fn delete_all(&mut self, keys: &[String]) -> Rev {
        let present: Vec<&String> = keys.iter().filter(|k| self.kvs.contains_key(*k)).collect();
        if present.is_empty() {
            return self.revision;
        }
        let rev = self.revision + 1;
        for key in present {
            self.kvs.remove(key);
            self.events.push(Event {
                revision: rev,
                kind: EventKind::Delete,
                key: key.clone(),
            });
        }
        self.revision = rev;
        rev
    }

    /// Whether every guard holds: which branch [`Store::txn`] would run, without running it.
    pub fn holds_all(&self, compares: &[Compare]) -> bool {
        compares.iter().all(|c| self.holds(c))
    }

    /// A read-only transaction of one range, without the `&mut` of [`Store::txn`]: its result
    /// is the one `txn` would give (the guards hold, the revision does not move).
    pub fn read(&self, range: &Range) -> TxnResult {
        TxnResult {
            revision: self.revision,
            succeeded: true,
            results: vec![OpResult::Get(self.range(range))],
        }
    }

    fn holds(&self, c: &Compare) -> bool {
        let kv = self.kvs.get(&c.key);
        let actual = match c.target {
            Target::Create => kv.map_or(0, |kv| kv.create_revision),
            Target::Mod => kv.map_or(0, |kv| kv.mod_revision),
            Target::Version => kv.map_or(0, |kv| kv.version),
            Target::Value => kv.map_or(0, |kv| kv.value),
        };
        match c.cmp {
            Cmp::Equal => actual == c.value,
            Cmp::NotEqual => actual != c.value,
            Cmp::Less => actual < c.value,
            Cmp::Greater => actual > c.value,
        }
    }

    fn apply(&mut self, op: &Op, rev: Rev) -> OpResult {
        match op {
            Op::Put { key, value, lease } => {
                match self.kvs.get_mut(key) {
                    Some(kv) => {
                        kv.value = *value;
                        kv.mod_revision = rev;
                        kv.version += 1;
                        kv.lease = *lease;
                    }
                    None => {
                        let kv = KeyValue {
                            key: key.clone(),
                            value: *value,
                            create_revision: rev,
                            mod_revision: rev,
                            version: 1,
                            lease: *lease,
                        };
                        self.kvs.insert(key.clone(), kv);
                    }
                }
                self.events.push(Event {
                    revision: rev,
                    kind: EventKind::Put,
                    key: key.clone(),
                });
                OpResult::Put
            }
            Op::Get(range) => OpResult::Get(self.range(range)),
            Op::Delete { key } => {
                if self.kvs.remove(key).is_some() {
                    self.events.push(Event {
                        revision: rev,
                        kind: EventKind::Delete,
                        key: key.clone(),
                    });
                    OpResult::Deleted(1)
                } else {
                    OpResult::Deleted(0)
                }
            }
        }
    }

    /// The keys a range finds, in key order; only the keys returned are cloned.
    fn range(&self, r: &Range) -> Vec<KeyValue> {
        let under = (Bound::Included(r.key.as_str()), Bound::Unbounded);
        let found = self
            .kvs
            .range::<str, _>(under)
            .take_while(|(k, _)| {
                if r.prefix {
                    k.starts_with(&r.key)
                } else {
                    **k == r.key
                }
            })
            .map(|(_, kv)| kv)
            .filter(|kv| r.max_create_rev.is_none_or(|max| kv.create_revision <= max));
        match r.first {
            None => found.cloned().collect(),
            Some(order) => {
                let pick = match order {
                    CreateOrder::First => found.min_by_key(|kv| kv.create_revision),
                    CreateOrder::Last => found.max_by_key(|kv| kv.create_revision),
                };
                pick.cloned().into_iter().collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: u64) -> Op {
        Op::Put {
            key: key.into(),
            value,
            lease: None,
        }
    }

    #[test]
    fn revisions_count_write_transactions() {
        let mut s = Store::new();
        assert_eq!(s.revision(), 1);
        let r = s.txn(&Txn {
            compares: vec![],
            success: vec![put("a", 1), put("b", 2)],
            failure: vec![],
        });
        assert_eq!(r.revision, 2, "one revision for the whole transaction");
        assert_eq!(s.get("a").map(|kv| kv.create_revision), Some(2));
        assert_eq!(s.get("b").map(|kv| kv.mod_revision), Some(2));
        s.txn(&Txn {
            compares: vec![],
            success: vec![put("a", 5)],
            failure: vec![],
        });
        let a = s.get("a").expect("a");
        assert_eq!((a.create_revision, a.mod_revision, a.version), (2, 3, 2));
        // A read-only transaction does not move the revision.
        let r = s.txn(&Txn {
            compares: vec![],
            success: vec![Op::Get(Range::key("a"))],
            failure: vec![],
        });
        assert_eq!(r.revision, 3);
    }

    #[test]
    fn compares_on_a_missing_key_see_zero() {
        let mut s = Store::new();
        let create_if_absent = Txn {
            compares: vec![Compare {
                key: "k".into(),
                target: Target::Create,
                cmp: Cmp::Equal,
                value: 0,
            }],
            success: vec![put("k", 1)],
            failure: vec![Op::Get(Range::key("k"))],
        };
        assert!(s.txn(&create_if_absent).succeeded);
        let again = s.txn(&create_if_absent);
        assert!(!again.succeeded);
        assert_eq!(again.revision, 2);
    }

    #[test]
    fn prefix_ranges_find_the_first_and_the_predecessor_by_creation() {
        let mut s = Store::new();
        for (k, _) in [("lock/c", 0), ("lock/a", 0), ("lock/b", 0), ("lockx", 0)] {
            s.txn(&Txn {
                compares: vec![],
                success: vec![put(k, 0)],
                failure: vec![],
            });
        }
        // Created at revisions 2 (c), 3 (a), 4 (b), 5 (lockx).
        let first = s.range(&Range {
            key: "lock/".into(),
            prefix: true,
            first: Some(CreateOrder::First),
            max_create_rev: None,
        });
        assert_eq!(first[0].key, "lock/c");
        let predecessor = s.range(&Range {
            key: "lock/".into(),
            prefix: true,
            first: Some(CreateOrder::Last),
            max_create_rev: Some(3),
        });
        assert_eq!(predecessor[0].key, "lock/a");
        let all = s.range(&Range {
            key: "lock/".into(),
            prefix: true,
            first: None,
            max_create_rev: None,
        });
        assert_eq!(all.len(), 3, "lockx is not under lock/");
        // The owner audit's walk: the same first creator, by reference.
        assert_eq!(
            s.first_created("lock/").map(|kv| kv.key.as_str()),
            Some("lock/c")
        );
        s.delete_all(&["lock/c".into()]);
        assert_eq!(
            s.first_created("lock/").map(|kv| kv.key.as_str()),
            Some("lock/a")
        );
        assert!(s.first_created("nothing/").is_none());
    }

    #[test]
    fn a_revoke_deletes_every_key_in_one_revision_and_leaves_events() {
        let mut s = Store::new();
        s.txn(&Txn {
            compares: vec![],
            success: vec![put("x", 1), put("y", 1)],
            failure: vec![],
        });
        let rev = s.delete_all(&["x".into(), "y".into(), "z".into()]);
        assert_eq!(rev, 3);
        assert!(s.get("x").is_none() && s.get("y").is_none());
        let ev: Vec<&Event> = s.events_since("y", 3).collect();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].kind, EventKind::Delete);
        assert_eq!(s.events_since("y", 1).count(), 2);
        assert_eq!(
            s.delete_all(&["x".into()]),
            3,
            "nothing to delete, no revision"
        );
    }
}
