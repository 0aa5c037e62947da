//! etcd's lessor (`server/lease/lessor.go`; docs/families/etcd.md).
//!
//! Leases and their attached keys are replicated state: grant, revoke and checkpoint are raft
//! entries, applied on every member. Expiry is not: only the primary lessor (the leader) keeps
//! an expiry time per lease, on its own MONO clock; every other member holds every lease
//! "forever". A renewal (keepalive) is not a raft entry either: the leader just moves the
//! expiry. When a member becomes leader it promotes its lessor and every lease gets
//! `now + remaining + extend`, where `remaining` is the checkpointed remaining TTL or, without a
//! checkpoint (the default), the full TTL, and `extend` is the election timeout.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_sim::{Dur, LocalTime};

use super::mvcc::LeaseId;

/// One lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Its TTL as granted (after the minimum is applied).
    pub ttl: Dur,
    /// The remaining TTL at the last checkpoint, if checkpointing is on.
    pub remaining: Option<Dur>,
    /// On the primary: when it expires on the leader's MONO clock. `None`: never (a member
    /// that is not primary).
    pub expiry: Option<LocalTime>,
    /// Keys attached to it, deleted with it.
    pub keys: BTreeSet<String>,
}

/// Why a renewal is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenewError {
    /// No such lease (revoked, or never granted): the client sees TTL 0.
    NotFound,
    /// This member is not the primary lessor; the request belongs to the leader.
    NotPrimary,
    /// The lease has expired but is not revoked yet: etcd holds the request until the revoke
    /// (then not found) or a demotion.
    Expired,
}

/// The lessor of one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lessor {
    leases: BTreeMap<LeaseId, Lease>,
    primary: bool,
    min_ttl: Dur,
}

impl Lessor {
    /// An empty lessor, not primary, that raises shorter TTLs to `min_ttl`
    /// ([`Lessor::min_ttl_for`]).
    pub fn new(min_ttl: Dur) -> Lessor {
        Lessor {
            leases: BTreeMap::new(),
            primary: false,
            min_ttl,
        }
    }

    /// etcd's minimum TTL for `election_ticks` ticks of `tick` (`etcdserver/server.go`):
    /// `(3 * ElectionTicks / 2) * TickMs`, rounded up to whole seconds — 2 s with the
    /// defaults (10 ticks of 100 ms).
    pub fn min_ttl_for(election_ticks: u32, tick: Dur) -> Dur {
        let raw = tick * u64::from(3 * election_ticks / 2);
        Dur::from_secs(raw.as_nanos().div_ceil(1_000_000_000))
    }

    /// True on the leader's lessor.
    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// A lease.
    pub fn get(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Applies a grant: the TTL is raised to the minimum; the primary starts its expiry now.
    /// Returns the TTL granted.
    pub fn grant(&mut self, id: LeaseId, ttl: Dur, now: LocalTime) -> Dur {
        let ttl = ttl.max(self.min_ttl);
        let expiry = self.primary.then(|| now + ttl);
        self.leases.insert(
            id,
            Lease {
                ttl,
                remaining: None,
                expiry,
                keys: BTreeSet::new(),
            },
        );
        ttl
    }

    /// Applies a revoke: forgets the lease and returns its keys, for one deleting transaction.
    pub fn revoke(&mut self, id: LeaseId) -> Vec<String> {
        self.leases
            .remove(&id)
            .map(|l| l.keys.into_iter().collect())
            .unwrap_or_default()
    }

    /// Applies a checkpoint of the remaining TTL.
    pub fn checkpoint(&mut self, id: LeaseId, remaining: Dur) {
        if let Some(l) = self.leases.get_mut(&id) {
            l.remaining = Some(remaining);
        }
    }

    /// Attaches `key` to lease `id` (a put with the lease); false if there is no such lease.
    pub fn attach(&mut self, id: LeaseId, key: &str) -> bool {
        match self.leases.get_mut(&id) {
            Some(l) => {
                l.keys.insert(key.to_string());
                true
            }
            None => false,
        }
    }

    /// Detaches `key` from whatever lease holds it (the key was deleted or re-put).
    pub fn detach(&mut self, id: LeaseId, key: &str) {
        if let Some(l) = self.leases.get_mut(&id) {
            l.keys.remove(key);
        }
    }

    /// A keepalive on the primary: the lease lives `ttl` from `now` again.
    ///
    /// # Errors
    /// [`RenewError`] when this member cannot renew it.
    pub fn renew(&mut self, id: LeaseId, now: LocalTime) -> Result<Dur, RenewError> {
        if !self.primary {
            return Err(RenewError::NotPrimary);
        }
        let l = self.leases.get_mut(&id).ok_or(RenewError::NotFound)?;
        if l.expiry.is_some_and(|e| e <= now) {
            return Err(RenewError::Expired);
        }
        l.expiry = Some(now + l.ttl);
        Ok(l.ttl)
    }

    /// Becomes primary: every lease expires `remaining + extend` from `now`, where
    /// `remaining` is the checkpoint or the full TTL (`lessor.Promote`).
    pub fn promote(&mut self, now: LocalTime, extend: Dur) {
        self.primary = true;
        for l in self.leases.values_mut() {
            let remaining = l.remaining.unwrap_or(l.ttl);
            l.expiry = Some(now + remaining + extend);
        }
    }

    /// Stops being primary: every lease lives forever here (`lessor.Demote`).
    pub fn demote(&mut self) {
        self.primary = false;
        for l in self.leases.values_mut() {
            l.expiry = None;
        }
    }

    /// On the primary, up to `limit` leases whose expiry has passed at `now`, in id order.
    pub fn expired(&self, now: LocalTime, limit: usize) -> Vec<LeaseId> {
        if !self.primary {
            return Vec::new();
        }
        self.leases
            .iter()
            .filter(|(_, l)| l.expiry.is_some_and(|e| e <= now))
            .map(|(&id, _)| id)
            .take(limit)
            .collect()
    }

    /// The remaining TTL of a lease on the primary at `now` (for checkpoints and `TimeToLive`).
    pub fn remaining(&self, id: LeaseId, now: LocalTime) -> Option<Dur> {
        let l = self.leases.get(&id)?;
        Some(l.expiry.map_or(l.ttl, |e| e.saturating_since(now)))
    }

    /// Every lease id, in order.
    pub fn ids(&self) -> impl Iterator<Item = LeaseId> + '_ {
        self.leases.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: i64) -> LocalTime {
        LocalTime::from_millis(v * 1000)
    }

    #[test]
    fn the_minimum_ttl_with_etcd_defaults_is_2s() {
        // ElectionMs 1000 / TickMs 100 = 10 ticks: 15 ticks = 1.5 s, rounded up to 2 s.
        assert_eq!(
            Lessor::min_ttl_for(10, Dur::from_millis(100)),
            Dur::from_secs(2)
        );
        // 5 ticks: 7 ticks = 700 ms, rounded up to 1 s; 20 ticks: exactly 3 s.
        assert_eq!(
            Lessor::min_ttl_for(5, Dur::from_millis(100)),
            Dur::from_secs(1)
        );
        assert_eq!(
            Lessor::min_ttl_for(20, Dur::from_millis(100)),
            Dur::from_secs(3)
        );
        let mut l = Lessor::new(Dur::from_secs(2));
        assert_eq!(l.grant(1, Dur::from_secs(1), s(0)), Dur::from_secs(2));
    }

    #[test]
    fn only_the_primary_expires_and_renews() {
        let mut l = Lessor::new(Dur::from_secs(2));
        l.grant(7, Dur::from_secs(10), s(0));
        assert_eq!(l.expired(s(100), 10), Vec::<LeaseId>::new());
        assert_eq!(l.renew(7, s(1)), Err(RenewError::NotPrimary));
        l.promote(s(5), Dur::from_secs(1));
        // No checkpoint: full TTL plus the election timeout.
        assert_eq!(l.get(7).and_then(|x| x.expiry), Some(s(16)));
        assert_eq!(l.renew(7, s(6)), Ok(Dur::from_secs(10)));
        assert_eq!(l.expired(s(15), 10), Vec::<LeaseId>::new());
        assert_eq!(l.expired(s(16), 10), vec![7]);
        assert_eq!(l.renew(7, s(16)), Err(RenewError::Expired));
        l.demote();
        assert_eq!(l.expired(s(100), 10), Vec::<LeaseId>::new());
        assert_eq!(l.renew(8, s(1)), Err(RenewError::NotPrimary));
    }

    #[test]
    fn a_new_leader_resets_every_lease_unless_checkpointed() {
        let mut l = Lessor::new(Dur::from_secs(2));
        l.promote(s(0), Dur::from_secs(1));
        l.grant(1, Dur::from_secs(60), s(0));
        l.grant(2, Dur::from_secs(60), s(0));
        l.checkpoint(2, Dur::from_secs(5));
        l.demote();
        l.promote(s(50), Dur::from_secs(1));
        assert_eq!(l.get(1).and_then(|x| x.expiry), Some(s(111)));
        assert_eq!(l.get(2).and_then(|x| x.expiry), Some(s(56)));
    }

    #[test]
    fn a_revoke_returns_the_attached_keys() {
        let mut l = Lessor::new(Dur::from_secs(2));
        l.grant(3, Dur::from_secs(5), s(0));
        assert!(l.attach(3, "lock/3"));
        assert!(l.attach(3, "lock/a"));
        assert!(!l.attach(4, "x"));
        l.detach(3, "lock/a");
        assert_eq!(l.revoke(3), vec!["lock/3".to_string()]);
        assert!(l.revoke(3).is_empty());
    }
}
