//! Redis, single instance: the server model, the lock client, and the commands between them
//! (docs/semantics.md §1).

pub mod client;
pub mod server;

pub use client::{RedisLock, RedisLockConfig, Release};
pub use server::{RedisServer, RedisServerConfig};

use lockstep_sim::Dur;

/// A key. The lock key and the fencing counter are fixed names; one lock per run.
pub type Key = &'static str;

/// The lock's key.
pub const LOCK_KEY: Key = "lock";
/// The counter `INCR`ed for fencing tokens.
pub const FENCE_KEY: Key = "fence";

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
}
