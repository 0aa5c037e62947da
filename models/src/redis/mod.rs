//! Redis: the server model with persistence and asynchronous replication, Sentinel, the lock
//! client, and the messages between them (docs/families/redis.md).
//!
//! A single instance is one [`RedisServer`] named `redis`. With replicas, the servers are
//! `redis-1` (the primary at start) and `redis-2` ... (its replicas); with Sentinel, the
//! [`Sentinel`]s `sentinel-1` ... watch them, fail over, and tell clients where the primary is.
//! Start reading at [`server`], then [`replication`], [`sentinel`] and [`client`].

pub mod client;
pub mod family;
pub mod persistence;
pub mod replication;
pub mod rwlock;
pub mod sentinel;
pub mod server;

pub use client::{LockTimer, RedisLock, RedisLockConfig, Release, Renew, WaitConfig};
pub use family::Redis;
pub use persistence::{CrashLoses, Persistence, SavePoint};
pub use replication::ReplMsg;
pub use sentinel::{Sentinel, SentinelConfig, SentinelMsg, SentinelTimer};
pub use server::{RedisServer, RedisServerConfig, ServerTimer};

use lockstep_sim::{Dur, NodeId};

use crate::env::Host;
use crate::family::Service;

/// A key: the lock's, another lock's (`lock:N`, with many locks) or the fencing counter.
pub type Key = &'static str;

/// The lock's key: lock 0, the one lock of a run with one.
pub const LOCK_KEY: Key = "lock";
/// The counter `INCR`ed for fencing tokens (one counter for every lock: tokens rise across
/// locks, so each lock's rise too).
pub const FENCE_KEY: Key = "fence";

/// The key of lock `lock`: [`LOCK_KEY`] for lock 0, `lock:N` for the others (with the `keys`
/// workload's many locks, at most [`crate::workload::keys::MAX_LOCKS`]). The names are made
/// once, so a key stays a `&'static str` that hashes as its text.
///
/// # Panics
/// Above the most locks; the loader refuses more.
pub fn lock_key(lock: u32) -> Key {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    if lock == 0 {
        return LOCK_KEY;
    }
    let names = NAMES.get_or_init(|| {
        (1..crate::workload::keys::MAX_LOCKS)
            .map(|n| format!("lock:{n}"))
            .collect()
    });
    &names[lock as usize - 1]
}

/// Whether `key` is a lock's key (not the fencing counter).
pub fn is_lock_key(key: Key) -> bool {
    key == LOCK_KEY || key.starts_with("lock:")
}

/// A command, as the client sends it. Lua scripts are single commands here: Redis runs a
/// script atomically with time frozen at its start, which is what a single handler does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// `SET key value NX PX ttl`.
    SetNxPx {
        /// The key.
        key: Key,
        /// The client's random value.
        value: u64,
        /// Time to live.
        ttl: Dur,
    },
    /// `GET key`.
    Get {
        /// The key.
        key: Key,
    },
    /// `DEL key`: the naive release.
    Del {
        /// The key.
        key: Key,
    },
    /// The release script: `if GET key == value then DEL key`.
    CompareAndDelete {
        /// The key.
        key: Key,
        /// The value the caller set.
        value: u64,
    },
    /// The renew script: `if GET key == value then PEXPIRE key ttl`.
    CompareAndPexpire {
        /// The key.
        key: Key,
        /// The value the caller set.
        value: u64,
        /// The new time to live.
        ttl: Dur,
    },
    /// `INCR key`.
    Incr {
        /// The key.
        key: Key,
    },
    /// `WAIT numreplicas timeout`: block until `replicas` replicas acknowledged the caller's
    /// last write, or `timeout` passed (zero blocks forever); the reply is the count.
    Wait {
        /// The number of replicas to wait for.
        replicas: u32,
        /// How long to block.
        timeout: Dur,
    },
    /// The acquire-and-fence script: `if SET key value NX PX ttl then return INCR counter`,
    /// one atomic step, so the token's order is the order the server granted the lock in.
    /// Replies with the token, or nil when the key is held.
    SetNxIncr {
        /// The lock's key.
        key: Key,
        /// The client's random value.
        value: u64,
        /// Time to live.
        ttl: Dur,
        /// The counter key.
        counter: Key,
    },
    /// Redisson's read or write lock script ([`rwlock`]): replies `+OK` when the caller holds
    /// the lock (the script's `nil`), or the hash's remaining TTL in ms when refused.
    RwLock {
        /// The lock's key.
        key: Key,
        /// The write lock's script (else the read lock's).
        write: bool,
        /// The caller's id in the hash (its random lock value).
        value: u64,
        /// Time to live.
        ttl: Dur,
    },
    /// Redisson's read or write unlock script: `1` freed, `0` still held by others, nil when
    /// the caller held no such side.
    RwUnlock {
        /// The lock's key.
        key: Key,
        /// The write lock's script (else the read lock's).
        write: bool,
        /// The caller's id in the hash.
        value: u64,
    },
    /// Redisson's renewal of a read-write lock (the watchdog): `1` renewed, `0` not a holder.
    RwRenew {
        /// The lock's key.
        key: Key,
        /// The caller's id in the hash.
        value: u64,
        /// The new time to live.
        ttl: Dur,
    },
}

impl Command {
    /// The lock key the command reads or changes, if any.
    pub fn lock_key(&self) -> Option<Key> {
        let key = match self {
            Command::SetNxPx { key, .. }
            | Command::Get { key }
            | Command::Del { key }
            | Command::CompareAndDelete { key, .. }
            | Command::CompareAndPexpire { key, .. }
            | Command::Incr { key }
            | Command::SetNxIncr { key, .. }
            | Command::RwLock { key, .. }
            | Command::RwUnlock { key, .. }
            | Command::RwRenew { key, .. } => *key,
            Command::Wait { .. } => return None,
        };
        is_lock_key(key).then_some(key)
    }
}

/// A reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// The nil reply.
    Nil,
    /// An integer reply.
    Int(i64),
    /// A bulk string reply, here always one of our `u64` values.
    Value(u64),
    /// `-READONLY`: a write sent to a replica (also the answer to `WAIT` on a replica, where
    /// real Redis sends a different error text; clients treat both alike).
    Readonly,
}

/// A write as a primary propagates it to its replicas and its AOF (`t_string.c`, `expire.c`):
/// deadlines are absolute (`PXAT`, `PEXPIREAT`), never relative TTLs, so a replica or a
/// reloaded file keeps the primary's deadline and judges it on its own clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplOp {
    /// `SET key value PXAT at` (no `PXAT` when the key has no deadline; `INCR` is propagated
    /// as the `SET` of its result).
    Set {
        /// The key.
        key: Key,
        /// The value.
        value: u64,
        /// The absolute deadline in ms of the expiry clock.
        at_ms: Option<i64>,
    },
    /// `PEXPIREAT key at`.
    PexpireAt {
        /// The key.
        key: Key,
        /// The absolute deadline in ms of the expiry clock.
        at_ms: i64,
    },
    /// `DEL key`: an explicit delete, or the primary's delete of a key it found expired.
    Del {
        /// The key.
        key: Key,
    },
}

/// A server's replication role, as `INFO replication` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A primary: accepts writes and streams them to its replicas.
    Master,
    /// A replica of the given primary.
    Replica {
        /// Its primary.
        of: NodeId,
    },
}

/// Every message of the Redis family: commands and replies, replication, Sentinel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A command to a server, with the client's request id.
    Command {
        /// The request id, echoed in the reply.
        id: u64,
        /// The command.
        cmd: Command,
    },
    /// A server's reply.
    Reply {
        /// The request id.
        id: u64,
        /// The reply.
        reply: Reply,
    },
    /// A message of a replication link.
    Repl(ReplMsg),
    /// A message to, from or between sentinels.
    Sentinel(SentinelMsg),
}

/// Timers of the Redis family's service nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// A server's timer.
    Server(ServerTimer),
    /// A sentinel's timer.
    Sentinel(SentinelTimer),
}

/// A service node of the Redis family (Redlock's instances are its servers too).
// A world holds a handful of nodes, each once: variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisNode {
    /// A Redis server.
    Server(RedisServer),
    /// A sentinel.
    Sentinel(Sentinel),
}

impl Service for RedisNode {
    type Msg = Msg;
    type Timer = Timer;

    fn plays(&self, role: &str) -> bool {
        match self {
            RedisNode::Server(s) => role == crate::family::played::PRIMARY && s.role() == Role::Master,
            RedisNode::Sentinel(_) => false,
        }
    }

    fn on_start(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        match self {
            RedisNode::Server(s) => s.on_start(ctx),
            RedisNode::Sentinel(s) => s.on_start(ctx),
        }
    }

    fn on_message(&mut self, ctx: &mut impl Host<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (RedisNode::Server(s), Msg::Command { id, cmd }) => s.on_command(ctx, from, id, cmd),
            (RedisNode::Server(s), Msg::Repl(m)) => s.on_repl(ctx, from, m),
            (RedisNode::Server(s), Msg::Sentinel(m)) => s.on_sentinel(ctx, from, m),
            (RedisNode::Sentinel(s), Msg::Sentinel(m)) => s.on_message(ctx, from, m),
            // Replies go to clients; commands and replication to servers only.
            (_, msg) => unreachable!("{} was sent {msg:?}", ctx.name()),
        }
    }

    fn on_timer(&mut self, ctx: &mut impl Host<Msg, Timer>, timer: Timer) {
        match (self, timer) {
            (RedisNode::Server(s), Timer::Server(t)) => s.on_timer(ctx, t),
            (RedisNode::Sentinel(s), Timer::Sentinel(t)) => s.on_timer(ctx, t),
            (_, timer) => unreachable!("{} got a timer it never set: {timer:?}", ctx.name()),
        }
    }

    fn on_crash(&mut self) {
        match self {
            RedisNode::Server(s) => s.on_crash(),
            RedisNode::Sentinel(s) => s.on_crash(),
        }
    }

    fn on_restart(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        match self {
            RedisNode::Server(s) => s.on_restart(ctx),
            RedisNode::Sentinel(s) => s.on_start(ctx),
        }
    }

    /// A sentinel's link to a server closes. A server keeps nothing per connection that
    /// matters here (a replica reconnects to its primary on its own timer).
    fn on_reset(&mut self, _ctx: &mut impl Host<Msg, Timer>, peer: NodeId) {
        if let RedisNode::Sentinel(s) = self {
            s.on_reset(peer);
        }
    }
}
