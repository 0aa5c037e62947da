//! ZooKeeper: sessions, the ensemble and the ephemeral-sequential lock recipe with Curator's
//! connection states on top (docs/families/zookeeper.md).
//!
//! - [`tree`] is the replicated state: the znode tree (`czxid`, `cversion`, `ephemeralOwner`)
//!   and the session table, as a pure state machine that applies transactions.
//! - [`server`] is one ensemble member: atomic broadcast and commit, the leader's session
//!   tracker (expiry on its MONO clock, rounded up to whole ticks), learners' touch tables,
//!   client connections and watches; and its owner audit, the client whose node its applied
//!   tree puts first in line, recorded as `Issued` with the node's czxid (docs/checker.md,
//!   service order), the ticket the client's grant names.
//! - [`client`] is the client: `ClientCnxn`'s connection state machine (ping when idle, a
//!   disconnect after 2T/3 of silence, `Expired` learned only on reconnect), a Curator-like
//!   layer (SUSPENDED, LOST, simulated expiration on the client's WALL clock) and the lock
//!   recipe (an ephemeral-sequential node, the lowest holds, watch the predecessor; or the
//!   variant that watches the parent, with its herd effect).
//! - [`proto`] is what they say to each other.
//!
//! **Atomic broadcast.** The ensemble reuses [`crate::raft`] for ZAB's broadcast, commit and
//! leader election instead of a second consensus core: the guarantees the lock relies on are
//! the same (a quorum acknowledges every proposal before it commits; a new leader is elected
//! only by a quorum whose logs it is at least as up to date as, which is ZAB's "the most
//! up-to-date server leads"; one leader per epoch; commits in one total order). A Raft term is
//! ZAB's epoch, and the zxid of a committed transaction is `(epoch, counter)` where the counter
//! restarts at every epoch: the new leader's first (empty) entry is `(epoch, 0)`, as ZAB's
//! `NEWLEADER`. Raft ticks every tickTime/2 (the leader's ping to its learners,
//! `Leader.java:778`) and a follower gives up on a silent leader after `syncLimit` ticks
//! (`syncLimit × tickTime`), as a learner's socket timeout does. At start-up every server is
//! LOOKING and elects at once (FastLeaderElection); the model gets there by starting fresh
//! servers at the edge of their election timeout. What is not modelled: ZAB's discovery and
//! synchronisation phases as messages (a learner serves clients only once it has applied an
//! entry of the current epoch, which is when ZAB would have synced it), observers, dynamic
//! reconfiguration, snapshots.

pub mod client;
pub mod family;
pub mod proto;
pub mod server;
pub mod tree;

use std::cmp::Ordering;

use lockstep_sim::{Dur, LocalTime};

pub use family::ZooKeeper;

/// Every message of the ZooKeeper family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A client's request on its connection `conn`.
    Request {
        /// The client's connection number, echoed in every message back on it.
        conn: u64,
        /// Its position in the connection's stream from the client (the connect is 0).
        seq: u64,
        /// The request.
        req: proto::Request,
    },
    /// A server's message on a client's connection `conn`.
    Reply {
        /// The client's connection number.
        conn: u64,
        /// Its position in the connection's stream from the server.
        seq: u64,
        /// The reply, watch event or close.
        reply: proto::Reply,
    },
    /// A message between ensemble members.
    Peer(proto::Peer),
}

/// Timers of a ZooKeeper server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerTimer {
    /// The broadcast's tick (every tickTime/2), which is also the leader's ping to learners.
    RaftTick,
    /// The leader's session tracker runs at a tick boundary of its MONO clock.
    Expiry {
        /// The epoch of the tracker that set it.
        epoch: u64,
    },
}

/// Timers of the ZooKeeper lock client. Those of a connection carry its number, so a timer of
/// a connection that is over is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientTimer {
    /// Connect again (after the random wait before a reconnect); `seq` is the number of the
    /// last connection when it was set.
    Reconnect {
        /// The last connection's number.
        seq: u64,
    },
    /// Connection `conn`'s connect attempt has taken `T / #servers`.
    ConnectTimeout {
        /// The connection.
        conn: u64,
    },
    /// Check whether connection `conn` has been silent for 2T/3.
    ReadCheck {
        /// The connection.
        conn: u64,
    },
    /// Check whether connection `conn` has been idle long enough to ping.
    PingCheck {
        /// The connection.
        conn: u64,
    },
    /// The socket of the last connection, number `seq`, is cleaned up: raise Disconnected
    /// (if it was connected) and go on to the next server.
    Cleanup {
        /// The closed connection's number.
        seq: u64,
        /// It was connected (not only connecting).
        was_connected: bool,
    },
    /// Curator's simulated expiration of SUSPENDED number `suspension` (WALL clock).
    Lost {
        /// The suspension.
        suspension: u64,
    },
}

/// A session id.
pub type SessionId = u64;

/// The path of the lock's parent node (it exists from the start, as Curator's
/// `creatingParentContainersIfNeeded` would have made it).
pub const LOCK_PATH: &str = "/lock";

/// The sequence number of a lock node's name: its last ten characters, the `%010d` counter
/// ZooKeeper appends to a sequential node's name. Curator's `fixForSorting` takes what follows
/// the lock name (`lock-`, or a read-write lock's `__READ__` and `__WRIT__`), which is the same
/// counter for every name the recipes make.
pub fn lock_sequence(name: &str) -> &str {
    let at = name.len().saturating_sub(10);
    name.get(at..).unwrap_or(name)
}

/// The lock name of a read-write lock's read nodes (Curator's `InterProcessReadWriteLock`).
pub const READ_LOCK_NAME: &str = "__READ__";
/// The lock name of a read-write lock's write nodes.
pub const WRITE_LOCK_NAME: &str = "__WRIT__";

/// Whether a lock node is a read-write lock's reader.
pub fn is_reader(name: &str) -> bool {
    name.contains(READ_LOCK_NAME)
}

/// The holders of the lock whose children are `names`, in the recipe's order
/// ([`lock_order`]): indexes into `names`. Curator's two predicates
/// (`InterProcessReadWriteLock.readLockPredicate`, `StandardLockInternalsDriver.getsTheLock`
/// with one lease): a read node holds when no write node is before it, any other node when it
/// is first. So the first node alone, or every read node before the first write node.
pub fn holders(names: &[&str]) -> std::ops::Range<usize> {
    match names.first() {
        Some(first) if is_reader(first) => {
            0..names.iter().position(|n| !is_reader(n)).unwrap_or(names.len())
        }
        Some(_) => 0..1,
        None => 0..0,
    }
}

/// The recipe's queue order of lock nodes by name: by sequence number, then by name. The first
/// node in this order holds the lock; the client and [`tree::DataTree::first_in_line`] both
/// use it.
pub fn lock_order(a: &str, b: &str) -> Ordering {
    lock_sequence(a).cmp(lock_sequence(b)).then(a.cmp(b))
}

/// ZooKeeper's transaction id: the leader's epoch and a counter that restarts at every epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Zxid {
    /// The epoch (the Raft term of the entry).
    pub epoch: u64,
    /// Position within the epoch; 0 is the new leader's first entry.
    pub counter: u64,
}

impl Zxid {
    /// The 64-bit form ZooKeeper shows (`epoch << 32 | counter`), used as the fencing token.
    pub fn as_u64(self) -> u64 {
        (self.epoch << 32) | (self.counter & 0xffff_ffff)
    }

    /// The zxid of the next committed entry, of epoch `epoch`, after `self`.
    pub fn next(self, epoch: u64) -> Zxid {
        if epoch == self.epoch {
            Zxid {
                epoch,
                counter: self.counter + 1,
            }
        } else {
            Zxid { epoch, counter: 0 }
        }
    }
}

/// The session timeout a server grants: the requested one clamped to
/// `[min, max]` (`ZooKeeperServer.java:1394-1403`; by default `[2, 20] × tickTime`).
pub fn negotiate_timeout(requested: Dur, min: Dur, max: Dur) -> Dur {
    requested.max(min).min(max)
}

/// `ExpiryQueue.roundToNextInterval`: `(time / interval + 1) × interval`, strictly after
/// `time`, on the leader's MONO clock. A session touched at `now` with timeout `T` expires at
/// `round_to_next_tick(now + T)`, so its real timeout is in `(T, T + tickTime]`.
pub fn round_to_next_tick(time: LocalTime, tick: Dur) -> LocalTime {
    let t = tick.as_nanos() as i64;
    LocalTime::from_nanos((time.as_nanos().div_euclid(t) + 1) * t)
}

/// How long `ClientCnxn` lets the connection idle before it pings, for a read timeout of
/// `read_timeout` (2T/3): half of it, T/3. The send thread's test
/// (`ClientCnxn.java:1250-1262`) is `idleSend ≥ readTimeout/2` (less 1 s once idleSend
/// passes 1 s) or `idleSend > 10 s`, but it is made only when the thread wakes, and on an
/// idle connection the thread sleeps `readTimeout/2` from its last send, so neither the
/// second nor the 10 s bound shows: the real 3.8 client pinged every 2.0 / 5.0 / 13.3 s at
/// T = 6 / 15 / 40 s (docs/conformance.md, "The last full table").
pub fn ping_interval(read_timeout: Dur) -> Dur {
    read_timeout / 2
}

/// How long after the socket is closed `ClientCnxn` raises Disconnected and goes on to the
/// next server: its socket cleanup sleeps 100 ms first (`ClientCnxnSocketNIO.cleanup`;
/// measured 4.10-4.12 s after the last receive at T = 6 s, docs/conformance.md).
pub const CLEANUP_SLEEP: Dur = Dur::from_millis(100);

/// `ClientCnxn`'s read timeout: 2/3 of the negotiated session timeout.
pub fn read_timeout(session_timeout: Dur) -> Dur {
    // Whole milliseconds, as the Java client computes it.
    Dur::from_millis(session_timeout.as_millis() * 2 / 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    #[test]
    fn the_timeout_is_clamped_to_2_and_20_ticks() {
        let (tick, min, max) = (ms(2_000), ms(4_000), ms(40_000));
        assert_eq!(negotiate_timeout(ms(1_000), min, max), ms(4_000));
        assert_eq!(negotiate_timeout(ms(4_000), min, max), ms(4_000));
        assert_eq!(negotiate_timeout(ms(10_000), min, max), ms(10_000));
        // Curator's default of 60 s is cut to 20 ticks.
        assert_eq!(negotiate_timeout(ms(60_000), min, max), tick * 20);
    }

    #[test]
    fn expiry_rounds_up_to_the_next_tick_strictly() {
        let tick = ms(2_000);
        let at = |v: i64| LocalTime::from_millis(v);
        assert_eq!(round_to_next_tick(at(0), tick), at(2_000));
        assert_eq!(round_to_next_tick(at(1), tick), at(2_000));
        assert_eq!(round_to_next_tick(at(1_999), tick), at(2_000));
        // A time on a boundary goes to the next one: the timeout is in (T, T + tick].
        assert_eq!(round_to_next_tick(at(2_000), tick), at(4_000));
        assert_eq!(round_to_next_tick(at(5_500), tick), at(6_000));
        for touch in [0, 1, 700, 1_999, 2_000, 12_345] {
            let expiry = round_to_next_tick(at(touch) + ms(4_000), tick);
            let real = expiry.nanos_since(at(touch)) / 1_000_000;
            assert!((4_001..=6_000).contains(&real), "touch {touch}: {real}");
        }
    }

    #[test]
    fn clients_ping_after_a_third_of_the_timeout() {
        assert_eq!(read_timeout(ms(4_000)), ms(2_666));
        assert_eq!(ping_interval(read_timeout(ms(4_000))), ms(1_333));
        // The real client's figures: no second subtracted, no 10 s cap.
        assert_eq!(ping_interval(read_timeout(ms(6_000))), ms(2_000));
        assert_eq!(ping_interval(read_timeout(ms(15_000))), ms(5_000));
        assert_eq!(ping_interval(read_timeout(ms(40_000))), ms(13_333));
    }

    #[test]
    fn the_sequence_is_the_ten_digits_after_the_lock_name() {
        assert_eq!(lock_sequence("_c_ab-lock-0000000003"), "0000000003");
        assert_eq!(lock_sequence("_c_ab-lock-lock-0000000004"), "0000000004");
        assert_eq!(lock_sequence("_c_ab-__READ__0000000005"), "0000000005");
        assert_eq!(lock_sequence("_c_ab-__WRIT__0000000006"), "0000000006");
        // A name shorter than a sequence number is its own.
        assert_eq!(lock_sequence("lock-"), "lock-");
        // By sequence, then by name.
        assert!(lock_order("_c_ff-lock-0000000001", "_c_00-lock-0000000002").is_lt());
        assert!(lock_order("_c_00-lock-0000000002", "_c_ff-lock-0000000002").is_lt());
    }

    #[test]
    fn zxids_restart_their_counter_in_a_new_epoch() {
        let z = Zxid::default().next(1);
        assert_eq!(
            z,
            Zxid {
                epoch: 1,
                counter: 0
            }
        );
        let z = z.next(1).next(1);
        assert_eq!(
            z,
            Zxid {
                epoch: 1,
                counter: 2
            }
        );
        let z2 = z.next(3);
        assert_eq!(
            z2,
            Zxid {
                epoch: 3,
                counter: 0
            }
        );
        assert!(z2 > z && z2.as_u64() > z.as_u64());
    }

    #[test]
    fn readers_before_the_first_writer_hold_together_and_a_writer_alone() {
        let r = |n: u32| format!("_c_{n:02}-__READ__{n:010}");
        let w = |n: u32| format!("_c_{n:02}-__WRIT__{n:010}");
        let mut line = [w(7), r(3), r(5), r(9), w(4)];
        // Curator orders by the sequence number, whatever the lock name.
        line.sort_by(|a, b| lock_order(a, b));
        let names: Vec<&str> = line.iter().map(String::as_str).collect();
        assert_eq!(names, [r(3), w(4), r(5), w(7), r(9)]);
        assert_eq!(holders(&names), 0..1, "one reader before the first writer");
        assert_eq!(holders(&names[1..]), 0..1, "a writer first holds alone");
        assert_eq!(holders(&names[2..]), 0..1);
        let readers = [r(3), r(5), w(7)];
        let readers: Vec<&str> = readers.iter().map(String::as_str).collect();
        assert_eq!(holders(&readers), 0..2);
        assert_eq!(holders(&readers[..2]), 0..2, "readers only: all of them");
        assert_eq!(holders(&[]), 0..0);
        // The plain mutex's nodes: the first alone.
        assert_eq!(holders(&["_c_01-lock-0000000001", "_c_02-lock-0000000002"]), 0..1);
    }
}
