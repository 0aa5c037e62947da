//! The Consul family: a raft cluster of servers named `consul-1`, `consul-2`, ... and clients
//! running `api.Lock` (docs/families/consul.md).

use lockstep_sim::{Dur, NodeId};
use serde::Deserialize;

use super::client::{ConsulLock, ConsulLockConfig};
use super::resource::ResourceGuard;
use super::server::{ConsulServer, ConsulServerConfig, TTL_MULTIPLIER};
use super::{Behavior, Msg, ServerTimer};
use crate::family::{Family, Fencing, MarkSite, Role, Tokens, numbered};
use crate::keys::Check;

/// The Consul family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consul {
    /// The cluster's settings (its members are filled in by `build`).
    pub server: ConsulServerConfig,
    /// How many servers.
    pub members: u32,
    /// The clients' settings (their servers are filled in by `build`).
    pub client: ConsulLockConfig,
}

/// The `[model]` keys of `kind = "consul"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsulKeys {
    kind: String,
    ttl_ms: Option<f64>,
    lock_delay_ms: Option<f64>,
    behavior: Option<BehaviorName>,
    #[serde(default)]
    fencing: ConsulFencing,
    members: Option<u32>,
    election_ms: Option<f64>,
    request_timeout_ms: Option<f64>,
    health_check: Option<bool>,
    suspicion_ms: Option<f64>,
    local_lease: Option<bool>,
}

/// The `[storage]` keys of `mode = "consul"`, the resource kept in the KV store.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsulResourceKeys {
    guard: Option<GuardName>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum GuardName {
    #[default]
    None,
    CheckSession,
    CheckIndex,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ConsulFencing {
    #[default]
    None,
    LockIndex,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum BehaviorName {
    Release,
    Delete,
}

/// `session_ttl_min` and `SessionTTLMax`.
const TTL_RANGE: (Dur, Dur) = (Dur::from_secs(10), Dur::from_secs(24 * 3600));
/// `structs.MaxLockDelay`.
const MAX_LOCK_DELAY: Dur = Dur::from_secs(60);

impl Family for Consul {
    const KIND: &'static str = "consul";
    const NAME: &'static str = "Consul";
    const FENCING: &'static [Fencing] = &[Fencing {
        name: "lock-index",
        what: "the key's LockIndex, the sequencer's generation",
        ordered: true,
    }];
    const RESOURCE_MODE: Option<&'static str> = Some("consul");

    type Msg = Msg;
    type Timer = ServerTimer;
    type Node = ConsulServer;
    type Lock = ConsulLock;
    type Keys = ConsulKeys;
    type ResourceKeys = ConsulResourceKeys;

    fn resolve(k: &ConsulKeys, check: &mut Check) -> Consul {
        debug_assert_eq!(k.kind, Self::KIND);
        let mut client = ConsulLockConfig::new(Vec::new());
        if let Some(v) = k.ttl_ms {
            let ttl = check.positive_ms("model.ttl_ms", v);
            if ttl != Dur::ZERO && !(TTL_RANGE.0..=TTL_RANGE.1).contains(&ttl) {
                check.problems.push(
                    "model.ttl_ms",
                    format!(
                        "a session TTL must be between {} (session_ttl_min) and {}, not {ttl}",
                        TTL_RANGE.0, TTL_RANGE.1
                    ),
                );
            }
            client.ttl = ttl;
        }
        if let Some(v) = k.lock_delay_ms {
            let d = check.ms("model.lock_delay_ms", v);
            if d > MAX_LOCK_DELAY {
                check.problems.push(
                    "model.lock_delay_ms",
                    format!("must be at most {MAX_LOCK_DELAY} (MaxLockDelay), not {d}"),
                );
            }
            client.lock_delay = d;
        }
        client.behavior = match k.behavior {
            None | Some(BehaviorName::Release) => Behavior::Release,
            Some(BehaviorName::Delete) => Behavior::Delete,
        };
        client.fencing = k.fencing == ConsulFencing::LockIndex;
        if let Some(t) = k.request_timeout_ms {
            client.request_timeout = check.positive_ms("model.request_timeout_ms", t);
        }
        let members = k.members.unwrap_or(3);
        if !(1..=9).contains(&members) {
            check.problems.push(
                "model.members",
                format!("must be between 1 and 9, not {members}"),
            );
        }
        let mut server = ConsulServerConfig::new(Vec::new());
        if let Some(v) = k.election_ms {
            let election = check.positive_ms("model.election_ms", v);
            let tick = server.tick.as_nanos();
            let ticks = election.as_nanos() / tick;
            if election != Dur::ZERO && (ticks < 2 || election.as_nanos() % tick != 0) {
                check.problems.push(
                    "model.election_ms",
                    format!(
                        "must be a whole number of ticks ({}), at least two, not {election}",
                        server.tick
                    ),
                );
            } else if election != Dur::ZERO {
                server.election_ticks = u32::try_from(ticks).unwrap_or(u32::MAX);
            }
        }
        // Chubby's client assumes the master's clock may run fast by a bounded factor; 1 %
        // here, Redlock's clock drift factor.
        client.local_lease_drift_ppm = (k.local_lease == Some(true)).then_some(10_000);
        let suspicion = match k.suspicion_ms {
            Some(v) => check.positive_ms("model.suspicion_ms", v),
            None => Dur::from_secs(4),
        };
        server.health_check = match k.health_check {
            Some(false) => {
                if k.suspicion_ms.is_some() {
                    check.problems.push(
                        "model.suspicion_ms",
                        "is the health check's: leave it out with health_check = false",
                    );
                }
                None
            }
            _ => Some(suspicion),
        };
        Consul {
            server,
            members: members.clamp(1, 9),
            client,
        }
    }

    fn resource(keys: &ConsulResourceKeys, _: &mut Check) -> Option<ResourceGuard> {
        Some(match keys.guard.unwrap_or_default() {
            GuardName::None => ResourceGuard::None,
            GuardName::CheckSession => ResourceGuard::CheckSession,
            GuardName::CheckIndex => ResourceGuard::CheckIndex,
        })
    }

    fn layout(&self) -> Vec<(String, Role)> {
        numbered("consul", self.members, Role::Server)
    }

    fn build(&self, _: Option<&ResourceGuard>) -> (Vec<ConsulServer>, ConsulLock) {
        let ids: Vec<NodeId> = (0..self.members).map(NodeId).collect();
        let config = ConsulServerConfig {
            members: ids.clone(),
            ..self.server.clone()
        };
        let nodes = ids
            .iter()
            .map(|&id| ConsulServer::new(config.clone(), id))
            .collect();
        let lock = ConsulLock::new(ConsulLockConfig {
            servers: ids,
            ..self.client.clone()
        });
        (nodes, lock)
    }

    fn played(&self) -> &'static [&'static str] {
        &[crate::family::played::LEADER]
    }

    fn marks(&self) -> &'static [(&'static str, MarkSite)] {
        &[
            ("leader-ready", MarkSite::Server),
            ("session-invalidated", MarkSite::Server),
            ("node-failed", MarkSite::Server),
        ]
    }

    fn tokens(&self) -> Tokens {
        // A new session's acquire increments the key's LockIndex (`kvsLockTxn`, `state/kvs.go`);
        // with `behavior = "delete"` an invalidation deletes the key, and the key created
        // anew counts from 1 again: no promise of order then.
        if self.client.fencing {
            Tokens::Ordered {
                monotonic: self.client.behavior == Behavior::Release,
            }
        } else {
            Tokens::None
        }
    }

    fn ttl(&self) -> Dur {
        // A dead holder's lock: the leader's timer (TTL × 2), then the lock-delay.
        (self.client.ttl * TTL_MULTIPLIER).saturating_add(self.client.lock_delay)
    }

    fn reentry(&self) -> Option<&'static str> {
        Some("refused by the client: api.Lock's Lock returns ErrLockHeld while it holds")
    }

    fn describe(&self) -> Vec<String> {
        let c = &self.client;
        let mut p = vec![
            format!("consul ×{}", self.members),
            format!("ttl {}", c.ttl),
            format!("lock-delay {}", c.lock_delay),
        ];
        if c.behavior == Behavior::Delete {
            p.push("behavior delete".to_string());
        }
        if c.fencing {
            p.push("lock-index-fenced".to_string());
        }
        if c.local_lease_drift_ppm.is_some() {
            p.push("Chubby local lease".to_string());
        }
        match self.server.health_check {
            None => p.push("no health check".to_string()),
            Some(s) if s != Dur::from_secs(4) => p.push(format!("suspicion {s}")),
            Some(_) => {}
        }
        p
    }

    fn describe_resource(guard: &ResourceGuard) -> String {
        match guard {
            ResourceGuard::None => "consul (unguarded)",
            ResourceGuard::CheckSession => "consul (check-session)",
            ResourceGuard::CheckIndex => "consul (check-index)",
        }
        .to_string()
    }
}
