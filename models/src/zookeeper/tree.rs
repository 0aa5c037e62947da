//! The replicated state of a ZooKeeper ensemble: the znode tree and the session table
//! (docs/families/zookeeper.md), as a pure state machine. Every server applies the same
//! committed transactions in the same order, each under its zxid, and gets the same tree.
//!
//! Only what the lock recipe touches is modelled: nodes without data, ephemeral and
//! sequential creation, deletion, and closing a session (which deletes its ephemeral nodes).
//! Applying a transaction returns the watch events it triggers; which clients get them is
//! the serving member's business (watches are local to the server a client is connected to).

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Bound, Deref};
use std::rc::Rc;

use lockstep_sim::Dur;

use super::{SessionId, Zxid, lock_order};

/// A znode path (or a child's name), shared rather than copied: the same path goes from a
/// client's request into a proposal, the broadcast's log and messages, the tree, the watch
/// events and the replies, and a copy is a reference count. It hashes, compares and prints
/// (`Debug` too) as the string itself, as a `String` does, so messages that carry paths hash
/// into a trace and print in it exactly as owned strings would.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(Rc<str>);

impl Deref for Path {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Path {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Path {
    fn from(s: &str) -> Path {
        Path(s.into())
    }
}

impl From<String> for Path {
    fn from(s: String) -> Path {
        Path(s.into())
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl PartialEq<str> for Path {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<String> for Path {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

/// One znode's stat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stat {
    /// The zxid of the transaction that created it: the lock's fencing token.
    pub czxid: Zxid,
    /// Its owner if it is ephemeral.
    pub ephemeral_owner: Option<SessionId>,
    /// Changes to its children so far; a sequential child's suffix is the parent's
    /// `cversion` at its creation.
    pub cversion: u64,
    /// The zxid of the last change to its children.
    pub pzxid: Zxid,
}

/// A transaction, as the leader proposes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Txn {
    /// `createSession`: the session enters the replicated table.
    CreateSession {
        /// Its id.
        session: SessionId,
        /// The negotiated timeout.
        timeout: Dur,
    },
    /// `closeSession` (expiry or an explicit close): its ephemeral nodes are deleted.
    CloseSession {
        /// The session.
        session: SessionId,
    },
    /// `create`.
    Create {
        /// The session asking.
        session: SessionId,
        /// The path; for a sequential node, the prefix the sequence number is appended to.
        path: Path,
        /// Deleted when the session closes.
        ephemeral: bool,
        /// Append the parent's `cversion` as ten digits.
        sequential: bool,
    },
    /// `delete`.
    Delete {
        /// The session asking.
        session: SessionId,
        /// The path.
        path: Path,
    },
}

/// Why an operation failed (`KeeperException.Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// No node at that path (or its parent).
    NoNode,
    /// A node is already there.
    NodeExists,
    /// The session is gone or closing.
    SessionExpired,
    /// The request came through a member that no longer owns the session: the client has
    /// reconnected elsewhere since it sent it (never seen by clients; the member closes the
    /// connection instead).
    SessionMoved,
    /// The connection broke before an answer came.
    ConnectionLoss,
}

/// What applying a transaction gave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TxnResult {
    /// Done (sessions, delete).
    Ok,
    /// The node created, with its czxid.
    Created {
        /// Its full path.
        path: Path,
        /// Its czxid.
        czxid: Zxid,
    },
    /// Refused.
    Error(ErrorCode),
}

/// A watch event a change triggers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// The watched node was created (exists watch).
    NodeCreated,
    /// The watched node was deleted (data or exists watch).
    NodeDeleted,
    /// A child of the watched node was created or deleted (child watch).
    NodeChildrenChanged,
}

/// The znode tree and the session table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataTree {
    nodes: BTreeMap<Path, Znode>,
    sessions: BTreeMap<SessionId, Dur>,
}

/// A node of the tree: its stat, and its name (the last component of its path), kept so
/// that a listing of the children hands out shared names instead of copying them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Znode {
    stat: Stat,
    name: Path,
}

impl Znode {
    fn new(path: &str, stat: Stat) -> Znode {
        let name = match path.rfind('/') {
            Some(i) => &path[i + 1..],
            None => path,
        };
        Znode {
            stat,
            name: name.into(),
        }
    }
}

/// `prefix` followed by `n` in at least ten digits, zero-padded: the name ZooKeeper gives a
/// sequential node (`%010d`), built without the formatting machinery.
fn sequential_path(prefix: &str, n: u64) -> Path {
    let mut digits = [b'0'; 20];
    let (mut at, mut v) = (digits.len(), n);
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = at.min(digits.len() - 10);
    let digits = std::str::from_utf8(&digits[start..]).expect("ASCII digits");
    let mut full = String::with_capacity(prefix.len() + digits.len());
    full.push_str(prefix);
    full.push_str(digits);
    full.into()
}

/// The parent path of `path` (`/lock/x` → `/lock`, `/lock` → `/`).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl DataTree {
    /// A tree holding the root and the persistent nodes `parents`.
    pub fn with_parents(parents: &[&str]) -> DataTree {
        let mut tree = DataTree::default();
        let empty = Stat {
            czxid: Zxid::default(),
            ephemeral_owner: None,
            cversion: 0,
            pzxid: Zxid::default(),
        };
        tree.nodes.insert("/".into(), Znode::new("/", empty));
        for p in parents {
            tree.nodes.insert((*p).into(), Znode::new(p, empty));
        }
        tree
    }

    /// The session table: id → negotiated timeout.
    pub fn sessions(&self) -> &BTreeMap<SessionId, Dur> {
        &self.sessions
    }

    /// A node's stat.
    pub fn stat(&self, path: &str) -> Option<&Stat> {
        self.nodes.get(path).map(|n| &n.stat)
    }

    /// The names of `path`'s children, in name order; `None` when `path` does not exist.
    pub fn children(&self, path: &str) -> Option<Vec<Path>> {
        self.nodes.get(path)?;
        let mut names = Vec::new();
        self.each_child(path, |node| names.push(node.name.clone()));
        Some(names)
    }

    /// Whether `path` has a child.
    fn has_children(&self, path: &str) -> bool {
        let mut any = false;
        self.each_child(path, |_| any = true);
        any
    }

    /// The child of `parent` the lock recipe puts first in line ([`super::lock_order`]: the
    /// lowest sequence number), with its stat; `None` when `parent` has no children.
    pub fn first_in_line(&self, parent: &str) -> Option<(&str, &Stat)> {
        let mut first: Option<(&str, &Stat)> = None;
        self.each_child(parent, |node| {
            let name = &*node.name;
            if first.is_none_or(|(f, _)| lock_order(name, f).is_lt()) {
                first = Some((name, &node.stat));
            }
        });
        first
    }

    /// The children of `parent` in the lock recipe's order ([`super::lock_order`]), with
    /// their stats.
    pub fn line(&self, parent: &str) -> Vec<(&str, &Stat)> {
        let mut line = Vec::new();
        self.each_child(parent, |node| line.push((&*node.name, &node.stat)));
        line.sort_by(|a, b| lock_order(a.0, b.0));
        line
    }

    /// Calls `f` with each child of `path` (its name and stat), in name order: the keys
    /// `path/name`, which lie among the keys after `path` that start with it.
    fn each_child<'a>(&'a self, path: &str, mut f: impl FnMut(&'a Znode)) {
        let base = path.strip_suffix('/').unwrap_or(path);
        for (p, node) in self
            .nodes
            .range::<str, _>((Bound::Excluded(path), Bound::Unbounded))
            .take_while(|(p, _)| p.starts_with(base))
        {
            if let Some(name) = p[base.len()..].strip_prefix('/') {
                if !name.is_empty() && !name.contains('/') {
                    f(node);
                }
            }
        }
    }

    /// Every ephemeral node with its owner, in path order.
    pub fn ephemerals(&self) -> impl Iterator<Item = (&str, SessionId)> {
        self.nodes
            .iter()
            .filter_map(|(p, n)| n.stat.ephemeral_owner.map(|o| (&**p, o)))
    }

    /// Applies `txn` as zxid `zxid`; returns its result and the watch events it triggers, as
    /// `(path, kind)`.
    pub fn apply(&mut self, txn: &Txn, zxid: Zxid) -> (TxnResult, Vec<(Path, EventKind)>) {
        let mut events = Vec::new();
        let result = match txn {
            Txn::CreateSession { session, timeout } => {
                self.sessions.insert(*session, *timeout);
                TxnResult::Ok
            }
            Txn::CloseSession { session } => {
                self.sessions.remove(session);
                let owned: Vec<Path> = self
                    .nodes
                    .iter()
                    .filter(|(_, n)| n.stat.ephemeral_owner == Some(*session))
                    .map(|(p, _)| p.clone())
                    .collect();
                for path in owned {
                    self.remove(&path, zxid, &mut events);
                }
                TxnResult::Ok
            }
            Txn::Create {
                session,
                path,
                ephemeral,
                sequential,
            } => self.create(*session, path, *ephemeral, *sequential, zxid, &mut events),
            Txn::Delete { path, .. } => {
                if self.nodes.contains_key(&**path) && !self.has_children(path) {
                    self.remove(path, zxid, &mut events);
                    TxnResult::Ok
                } else {
                    TxnResult::Error(ErrorCode::NoNode)
                }
            }
        };
        (result, events)
    }

    fn create(
        &mut self,
        session: SessionId,
        path: &Path,
        ephemeral: bool,
        sequential: bool,
        zxid: Zxid,
        events: &mut Vec<(Path, EventKind)>,
    ) -> TxnResult {
        if ephemeral && !self.sessions.contains_key(&session) {
            // The leader checks the session before it proposes; a create that raced with
            // the session's close in the log finds it gone here.
            return TxnResult::Error(ErrorCode::SessionExpired);
        }
        let Some((parent, p)) = self.nodes.get_key_value(parent_of(path)) else {
            return TxnResult::Error(ErrorCode::NoNode);
        };
        let parent = parent.clone();
        let full = if sequential {
            sequential_path(path, p.stat.cversion)
        } else {
            path.clone()
        };
        if self.nodes.contains_key(&*full) {
            return TxnResult::Error(ErrorCode::NodeExists);
        }
        let stat = Stat {
            czxid: zxid,
            ephemeral_owner: ephemeral.then_some(session),
            cversion: 0,
            pzxid: zxid,
        };
        self.nodes.insert(full.clone(), Znode::new(&full, stat));
        let p = &mut self.nodes.get_mut(&*parent).expect("parent checked").stat;
        p.cversion += 1;
        p.pzxid = zxid;
        events.push((full.clone(), EventKind::NodeCreated));
        events.push((parent, EventKind::NodeChildrenChanged));
        TxnResult::Created {
            path: full,
            czxid: zxid,
        }
    }

    fn remove(&mut self, path: &str, zxid: Zxid, events: &mut Vec<(Path, EventKind)>) {
        let removed = match self.nodes.remove_entry(path) {
            Some((key, _)) => key,
            None => path.into(),
        };
        let parent = parent_of(path);
        let parent = match self.nodes.get_key_value(parent) {
            Some((key, _)) => key.clone(),
            None => parent.into(),
        };
        if let Some(p) = self.nodes.get_mut(&*parent) {
            p.stat.cversion += 1;
            p.stat.pzxid = zxid;
        }
        events.push((removed, EventKind::NodeDeleted));
        events.push((parent, EventKind::NodeChildrenChanged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(counter: u64) -> Zxid {
        Zxid { epoch: 1, counter }
    }

    fn create(session: SessionId, prefix: &str) -> Txn {
        Txn::Create {
            session,
            path: prefix.into(),
            ephemeral: true,
            sequential: true,
        }
    }

    #[test]
    fn sequential_children_take_the_parents_cversion_and_close_deletes_ephemerals() {
        let mut t = DataTree::with_parents(&["/lock"]);
        t.apply(
            &Txn::CreateSession {
                session: 7,
                timeout: Dur::from_secs(4),
            },
            z(1),
        );
        t.apply(
            &Txn::CreateSession {
                session: 8,
                timeout: Dur::from_secs(4),
            },
            z(2),
        );
        let (a, _) = t.apply(&create(7, "/lock/a-lock-"), z(3));
        let (b, ev) = t.apply(&create(8, "/lock/b-lock-"), z(4));
        assert_eq!(
            a,
            TxnResult::Created {
                path: "/lock/a-lock-0000000000".into(),
                czxid: z(3)
            }
        );
        assert_eq!(
            b,
            TxnResult::Created {
                path: "/lock/b-lock-0000000001".into(),
                czxid: z(4)
            }
        );
        assert!(ev.contains(&("/lock".into(), EventKind::NodeChildrenChanged)));
        assert_eq!(
            t.children("/lock").unwrap(),
            ["a-lock-0000000000", "b-lock-0000000001"].map(Path::from)
        );
        let (_, ev) = t.apply(&Txn::CloseSession { session: 7 }, z(5));
        assert!(ev.contains(&("/lock/a-lock-0000000000".into(), EventKind::NodeDeleted)));
        assert_eq!(
            t.children("/lock").unwrap(),
            ["b-lock-0000000001"].map(Path::from)
        );
        // A closed session cannot create ephemerals any more.
        let (r, _) = t.apply(&create(7, "/lock/a-lock-"), z(6));
        assert_eq!(r, TxnResult::Error(ErrorCode::SessionExpired));
        // The counter kept counting: deletes count as child changes too.
        let (c, _) = t.apply(&create(8, "/lock/c-lock-"), z(7));
        assert_eq!(
            c,
            TxnResult::Created {
                path: "/lock/c-lock-0000000003".into(),
                czxid: z(7)
            }
        );
        assert_eq!(parent_of("/lock/c"), "/lock");
        // `%010d`: ten digits at least, more when the counter needs them.
        assert_eq!(&*sequential_path("/lock/x-", 42), "/lock/x-0000000042");
        assert_eq!(&*sequential_path("/lock/x-", 12_345_678_901), "/lock/x-12345678901");
        assert_eq!(&*sequential_path("/", u64::MAX), format!("/{:010}", u64::MAX));
        assert_eq!(parent_of("/lock"), "/");
    }

    #[test]
    fn a_path_hashes_and_prints_as_the_string() {
        use lockstep_sim::trace::TraceHasher;
        use std::hash::{Hash, Hasher};
        fn hash_of(v: impl Hash) -> u64 {
            let mut h = TraceHasher::new();
            v.hash(&mut h);
            h.finish()
        }
        let s = "/lock/_c_00-lock-0000000001".to_string();
        let p = Path::from(s.as_str());
        assert_eq!(hash_of(&p), hash_of(&s));
        assert_eq!(hash_of(vec![p.clone()]), hash_of(vec![s.clone()]));
        assert_eq!(format!("{p:?}"), format!("{s:?}"));
        assert_eq!(format!("{p}"), s);
        assert_eq!(p, s);
    }

    #[test]
    fn children_are_the_direct_children_only() {
        let mut t = DataTree::with_parents(&["/lock", "/lock-x", "/lock.y", "/lockz", "/lock/sub"]);
        t.apply(
            &Txn::CreateSession {
                session: 7,
                timeout: Dur::from_secs(4),
            },
            z(1),
        );
        t.apply(&create(7, "/lock/sub/deep-lock-"), z(2));
        t.apply(&create(7, "/lock/a-lock-"), z(3));
        assert_eq!(
            t.children("/lock").unwrap(),
            ["a-lock-0000000000", "sub"].map(Path::from)
        );
        assert_eq!(
            t.children("/").unwrap(),
            ["lock", "lock-x", "lock.y", "lockz"].map(Path::from)
        );
        assert_eq!(t.children("/lock-x").unwrap(), Vec::<Path>::new());
        assert_eq!(t.children("/nothing"), None);
    }

    #[test]
    fn first_in_line_is_the_lowest_sequence_number_not_the_first_name() {
        let mut t = DataTree::with_parents(&["/lock"]);
        assert_eq!(t.first_in_line("/lock"), None);
        for (i, session) in [7, 8].into_iter().enumerate() {
            let session_txn = Txn::CreateSession {
                session,
                timeout: Dur::from_secs(4),
            };
            t.apply(&session_txn, z(1 + i as u64));
        }
        // By name "_c_ff" sorts after "_c_00"; by sequence it is first.
        t.apply(&create(7, "/lock/_c_ff-lock-"), z(3));
        t.apply(&create(8, "/lock/_c_00-lock-"), z(4));
        let (name, stat) = t.first_in_line("/lock").expect("two children");
        assert_eq!((name, stat.czxid), ("_c_ff-lock-0000000000", z(3)));
        assert_eq!(stat.ephemeral_owner, Some(7));
        // The holder's session closes: the next in line holds.
        t.apply(&Txn::CloseSession { session: 7 }, z(5));
        let (name, stat) = t.first_in_line("/lock").expect("one child");
        assert_eq!((name, stat.czxid), ("_c_00-lock-0000000001", z(4)));
        let delete = Txn::Delete {
            session: 8,
            path: "/lock/_c_00-lock-0000000001".into(),
        };
        t.apply(&delete, z(6));
        assert_eq!(t.first_in_line("/lock"), None);
        // A node that does not exist has no one in line either.
        assert_eq!(t.first_in_line("/nothing"), None);
    }
}
