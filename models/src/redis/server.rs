//! The Redis server model: a keyspace with absolute expiry deadlines judged on the server's
//! WALL clock, as real Redis does (docs/semantics.md §1.1-§1.3).
//!
//! Every command reads the clock once at its start (`commandTimeSnapshot`), so nothing can
//! expire in the middle of a command or script. Expiry is lazy: a key past its deadline is
//! deleted when a command touches it, with the strict predicate `now > when` of `keyIsExpired`.
//! Active expiry (`activeExpireCycle`) deletes the same keys earlier but changes no reply, so
//! it is not modelled; keyspace notifications are not modelled either.

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Ctx, NodeId};

use super::{Command, Key, Reply};
use crate::node::{Msg, Node};

/// How a Redis server is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisServerConfig {
    /// The clock expiry deadlines are set and judged on. Real Redis uses WALL; `Mono` is the
    /// fix antirez proposed, for comparison (failure catalogue K4).
    pub expiry_clock: ClockKind,
}

impl Default for RedisServerConfig {
    fn default() -> RedisServerConfig {
        RedisServerConfig {
            expiry_clock: ClockKind::Wall,
        }
    }
}

/// One stored key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    value: u64,
    /// Absolute deadline in ms of the expiry clock (Unix ms for WALL), `None` without a TTL.
    expires_at_ms: Option<i64>,
}

/// A single Redis instance without persistence: a crash loses the keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisServer {
    config: RedisServerConfig,
    db: BTreeMap<Key, Entry>,
}

impl RedisServer {
    /// An empty server.
    pub fn new(config: RedisServerConfig) -> RedisServer {
        RedisServer {
            config,
            db: BTreeMap::new(),
        }
    }

    /// Handles one command from `from` and replies.
    pub(crate) fn on_command(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
        from: NodeId,
        id: u64,
        cmd: Command,
    ) {
        let now_ms = ctx.clock(self.config.expiry_clock).as_millis();
        let reply = self.execute(now_ms, cmd);
        ctx.send(from, Msg::RedisReply { id, reply });
    }

    /// Runs a command at the command-time snapshot `now_ms`.
    fn execute(&mut self, now_ms: i64, cmd: Command) -> Reply {
        match cmd {
            Command::SetNxPx { key, value, ttl } => {
                if self.lookup(now_ms, key).is_some() {
                    return Reply::Nil;
                }
                let expires_at_ms = Some(now_ms + ttl.as_millis() as i64);
                self.db.insert(
                    key,
                    Entry {
                        value,
                        expires_at_ms,
                    },
                );
                Reply::Ok
            }
            Command::Get { key } => match self.lookup(now_ms, key) {
                Some(e) => Reply::Value(e.value),
                None => Reply::Nil,
            },
            Command::Del { key } => {
                let existed = self.lookup(now_ms, key).is_some();
                self.db.remove(key);
                Reply::Int(i64::from(existed))
            }
            Command::CompareAndDelete { key, value } => match self.lookup(now_ms, key) {
                Some(e) if e.value == value => {
                    self.db.remove(key);
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::CompareAndPexpire { key, value, ttl } => match self.lookup(now_ms, key) {
                Some(e) if e.value == value => {
                    let entry = self.db.get_mut(key).expect("looked up");
                    entry.expires_at_ms = Some(now_ms + ttl.as_millis() as i64);
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::Incr { key } => {
                let next = self.lookup(now_ms, key).map_or(0, |e| e.value) + 1;
                let expires_at_ms = self.db.get(key).and_then(|e| e.expires_at_ms);
                self.db.insert(
                    key,
                    Entry {
                        value: next,
                        expires_at_ms,
                    },
                );
                Reply::Int(next as i64)
            }
        }
    }

    /// `lookupKey` with `expireIfNeeded`: a key past its deadline is deleted and absent.
    fn lookup(&mut self, now_ms: i64, key: Key) -> Option<Entry> {
        let entry = *self.db.get(key)?;
        if entry.expires_at_ms.is_some_and(|when| now_ms > when) {
            self.db.remove(key);
            return None;
        }
        Some(entry)
    }

    /// A crash without persistence loses every key (docs/semantics.md §1.4, first row).
    pub(crate) fn on_crash(&mut self) {
        self.db.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::Dur;

    fn server() -> RedisServer {
        RedisServer::new(RedisServerConfig::default())
    }

    fn set(ttl_ms: u64, value: u64) -> Command {
        Command::SetNxPx {
            key: "lock",
            value,
            ttl: Dur::from_millis(ttl_ms),
        }
    }

    #[test]
    fn set_nx_fails_while_the_key_lives_and_succeeds_after_expiry() {
        let mut s = server();
        assert_eq!(s.execute(1_000, set(100, 1)), Reply::Ok);
        assert_eq!(
            s.execute(1_100, set(100, 2)),
            Reply::Nil,
            "now == when is not expired"
        );
        assert_eq!(
            s.execute(1_101, set(100, 2)),
            Reply::Ok,
            "now > when is expired"
        );
    }

    #[test]
    fn compare_and_delete_only_deletes_the_callers_value() {
        let mut s = server();
        s.execute(0, set(100, 7));
        assert_eq!(
            s.execute(
                1,
                Command::CompareAndDelete {
                    key: "lock",
                    value: 8
                }
            ),
            Reply::Int(0)
        );
        assert_eq!(
            s.execute(
                1,
                Command::CompareAndDelete {
                    key: "lock",
                    value: 7
                }
            ),
            Reply::Int(1)
        );
        assert_eq!(s.execute(1, Command::Get { key: "lock" }), Reply::Nil);
    }

    #[test]
    fn plain_del_deletes_anyones_lock() {
        let mut s = server();
        s.execute(0, set(100, 7));
        assert_eq!(s.execute(1, Command::Del { key: "lock" }), Reply::Int(1));
        assert_eq!(s.execute(1, set(100, 8)), Reply::Ok);
    }

    #[test]
    fn renew_extends_from_the_command_time_and_fails_on_an_expired_key() {
        let mut s = server();
        s.execute(0, set(100, 7));
        let renew = |v| Command::CompareAndPexpire {
            key: "lock",
            value: v,
            ttl: Dur::from_millis(100),
        };
        assert_eq!(s.execute(90, renew(7)), Reply::Int(1));
        assert_eq!(s.execute(185, set(100, 9)), Reply::Nil, "renewed until 190");
        assert_eq!(s.execute(191, renew(7)), Reply::Int(0), "expired at 190");
    }

    #[test]
    fn incr_counts_from_one_and_never_expires() {
        let mut s = server();
        let incr = Command::Incr { key: "fence" };
        assert_eq!(s.execute(0, incr.clone()), Reply::Int(1));
        assert_eq!(s.execute(i64::MAX / 2, incr), Reply::Int(2));
    }
}
