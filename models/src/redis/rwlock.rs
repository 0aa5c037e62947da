//! Redisson's `RReadWriteLock` on one Redis server: the Lua scripts of `RedissonReadLock` and
//! `RedissonWriteLock` (redisson/src/main/java/org/redisson/RedissonReadLock.java,
//! RedissonWriteLock.java, `tryLockInnerAsync`, `unlockInnerAsync`, `renewExpirationAsync`),
//! each one atomic step at the command's time snapshot as Redis runs a script.
//!
//! The lock is a hash: `mode` (`read` or `write`) and one field per holder (its id, with a
//! re-entry count: always 1 here), under one TTL for the whole hash; each reader also sets a
//! timeout key of its own (`{lock}:<id>:rwlock_timeout:1`) with the TTL. So:
//!
//! - a reader joins whenever the mode is `read`, and pushes the hash's TTL to at least its
//!   own (`pexpire(KEYS[1], math.max(remainTime, ARGV[1]))`); a writer gets in only when the
//!   hash is gone. Nothing queues: a writer retrying while readers come and go is starved for
//!   as long as the readers overlap.
//! - a reader's unlock removes its field and timeout key; if holders remain, the hash's TTL
//!   becomes the longest remaining timeout key's, and if none is left alive (the holders that
//!   remain crashed), the hash is deleted.
//! - a reader's renewal (the watchdog) extends the hash **and every reader's timeout key** that
//!   still exists, a crashed reader's included: its field outlives it for as long as a live
//!   reader renews before its key lapses.
//!
//! Not modelled: re-entry counts, a writer taking the read lock (downgrade), pub/sub unlock
//! messages (the client retries on its own delay instead), replication and persistence (the
//! loader allows the read-write lock on a single instance without persistence only).

use std::collections::BTreeMap;

/// One read-write lock's hash and its readers' timeout keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RwHash {
    /// `mode = write`.
    write: bool,
    /// Each holder's id (the client's lock value) with the deadline of its timeout key in ms
    /// of the expiry clock (a writer has none: `i64::MAX`).
    holders: BTreeMap<u64, i64>,
    /// The hash's deadline in ms of the expiry clock.
    expires_at_ms: i64,
}

/// What a script did, for the server's audit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The caller holds the lock now (`nil` from the lock script).
    Acquired,
    /// The caller was refused, with the hash's remaining TTL in ms (`pttl`).
    Refused(i64),
    /// Unlock or renewal: the script's integer reply (`1`, `0`), or `nil` as `None`.
    Int(Option<i64>),
}

/// The read-write locks of a server, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RwLocks {
    locks: BTreeMap<&'static str, RwHash>,
}

impl RwLocks {
    /// The hash of `key` at `now_ms`, deleted if it expired (`now > deadline`, as a key).
    fn live(&mut self, key: &'static str, now_ms: i64) -> Option<&mut RwHash> {
        if self
            .locks
            .get(key)
            .is_some_and(|h| now_ms > h.expires_at_ms)
        {
            self.locks.remove(key);
        }
        self.locks.get_mut(key)
    }

    /// Whether `key`'s hash exists at `now_ms`.
    pub fn held(&mut self, key: &'static str, now_ms: i64) -> bool {
        self.live(key, now_ms).is_some()
    }

    /// The deadline of `key`'s hash at `now_ms`, in ms of the expiry clock, if it exists.
    pub fn deadline(&mut self, key: &'static str, now_ms: i64) -> Option<i64> {
        self.live(key, now_ms).map(|h| h.expires_at_ms)
    }

    /// The read or write lock script for holder `id` with `ttl_ms`.
    pub fn lock(&mut self, key: &'static str, write: bool, id: u64, ttl_ms: i64, now_ms: i64) -> Outcome {
        let deadline = now_ms + ttl_ms;
        let Some(h) = self.live(key, now_ms) else {
            let timeout = if write { i64::MAX } else { deadline };
            self.locks.insert(
                key,
                RwHash {
                    write,
                    holders: BTreeMap::from([(id, timeout)]),
                    expires_at_ms: deadline,
                },
            );
            return Outcome::Acquired;
        };
        match (write, h.write) {
            // A reader joins the readers; the hash lives at least as long as its timeout.
            (false, false) => {
                h.holders.insert(id, deadline);
                h.expires_at_ms = h.expires_at_ms.max(deadline);
                Outcome::Acquired
            }
            _ => Outcome::Refused(h.expires_at_ms - now_ms),
        }
    }

    /// The read or write unlock script for holder `id`.
    pub fn unlock(&mut self, key: &'static str, write: bool, id: u64, now_ms: i64) -> Outcome {
        let Some(h) = self.live(key, now_ms) else {
            return Outcome::Int(Some(1)); // `mode == false`: already free.
        };
        if h.write != write || h.holders.remove(&id).is_none() {
            return Outcome::Int(None); // Not a holder of this side.
        }
        if !write && !h.holders.is_empty() {
            // The longest remaining timeout key's TTL (`pttl` of a gone key is -2).
            let max_remain = h
                .holders
                .values()
                .map(|&at| if now_ms > at { -2 } else { at - now_ms })
                .max()
                .unwrap_or(-3);
            if max_remain > 0 {
                h.expires_at_ms = now_ms + max_remain;
                return Outcome::Int(Some(0));
            }
        }
        self.locks.remove(key);
        Outcome::Int(Some(1))
    }

    /// The watchdog's renewal for holder `id`: the hash's TTL, and a reader's every timeout
    /// key's that still exists, set to `ttl_ms` (`pexpire` of a key already gone does nothing).
    pub fn renew(&mut self, key: &'static str, id: u64, ttl_ms: i64, now_ms: i64) -> Outcome {
        let Some(h) = self.live(key, now_ms) else {
            return Outcome::Int(Some(0));
        };
        if !h.holders.contains_key(&id) {
            return Outcome::Int(Some(0));
        }
        let deadline = now_ms + ttl_ms;
        h.expires_at_ms = deadline;
        if !h.write {
            for at in h.holders.values_mut().filter(|at| now_ms <= **at) {
                *at = deadline;
            }
        }
        Outcome::Int(Some(1))
    }

    /// A crash without persistence: every lock is gone.
    pub fn clear(&mut self) {
        self.locks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &str = "lock";

    #[test]
    fn readers_share_and_a_writer_waits_for_the_hash_to_go() {
        let mut l = RwLocks::default();
        assert_eq!(l.lock(K, false, 1, 1_000, 0), Outcome::Acquired);
        assert_eq!(l.lock(K, false, 2, 1_000, 500), Outcome::Acquired);
        // The second reader pushed the hash's TTL to its own.
        assert_eq!(l.lock(K, true, 3, 1_000, 600), Outcome::Refused(900));
        assert_eq!(l.unlock(K, false, 1, 700), Outcome::Int(Some(0)));
        assert_eq!(l.lock(K, true, 3, 1_000, 800), Outcome::Refused(700));
        assert_eq!(l.unlock(K, false, 2, 900), Outcome::Int(Some(1)));
        assert_eq!(l.lock(K, true, 3, 1_000, 1_000), Outcome::Acquired);
        // A writer excludes readers and other writers.
        assert_eq!(l.lock(K, false, 4, 1_000, 1_100), Outcome::Refused(900));
        assert_eq!(l.lock(K, true, 5, 1_000, 1_100), Outcome::Refused(900));
        assert_eq!(l.unlock(K, false, 4, 1_200), Outcome::Int(None));
        assert_eq!(l.unlock(K, true, 3, 1_200), Outcome::Int(Some(1)));
        assert!(!l.held(K, 1_200));
    }

    #[test]
    fn a_crashed_readers_field_lives_while_another_reader_renews() {
        let mut l = RwLocks::default();
        l.lock(K, false, 1, 1_000, 0); // crashes, never unlocks
        l.lock(K, false, 2, 1_000, 100);
        // Reader 2's watchdog renews every reader's timeout key, reader 1's too.
        assert_eq!(l.renew(K, 2, 1_000, 900), Outcome::Int(Some(1)));
        // Reader 2 leaves: reader 1's timeout key, renewed, still keeps the hash.
        assert_eq!(l.unlock(K, false, 2, 1_000), Outcome::Int(Some(0)));
        assert_eq!(l.lock(K, true, 3, 1_000, 1_800), Outcome::Refused(100));
        assert!(!l.held(K, 1_901), "the hash expires with the last timeout");
        assert_eq!(l.lock(K, true, 3, 1_000, 1_901), Outcome::Acquired);
    }

    #[test]
    fn a_renewal_does_not_bring_back_a_timeout_key_already_gone() {
        let mut l = RwLocks::default();
        l.lock(K, false, 1, 100, 0); // crashes; its timeout key lapses at 100
        l.lock(K, false, 2, 1_000, 50);
        assert_eq!(l.renew(K, 2, 1_000, 500), Outcome::Int(Some(1)));
        // Reader 1's key was gone at 500: only reader 2's was extended, so its unlock frees.
        assert_eq!(l.unlock(K, false, 2, 600), Outcome::Int(Some(1)));
        assert!(!l.held(K, 600));
    }

    #[test]
    fn an_unlock_with_only_expired_readers_left_deletes_the_hash() {
        let mut l = RwLocks::default();
        l.lock(K, false, 1, 100, 0); // its timeout key expires at 100
        l.lock(K, false, 2, 1_000, 50);
        assert_eq!(l.unlock(K, false, 2, 500), Outcome::Int(Some(1)));
        assert!(!l.held(K, 500));
    }
}
