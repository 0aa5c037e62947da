//! The etcd family: a raft cluster of members named `etcd-1`, `etcd-2`, ... and clients
//! running the concurrency package's session and Mutex (or Election); the protected resource
//! may live in the key space (`[storage] mode = "etcd"`) (docs/scenarios.md, `etcd`).

use lockstep_sim::{Dur, NodeId};
use serde::Deserialize;

use super::client::{EtcdLock, EtcdLockConfig, Recipe};
use super::resource::ResourceGuard;
use super::server::{EtcdServer, EtcdServerConfig};
use super::{Msg, ServerTimer};
use crate::family::{numbered, Family, Fencing, MarkSite, Role, Tokens};
use crate::keys::Check;
use crate::raft::ReadOnlyOption;

/// The etcd family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Etcd {
    /// The cluster's settings (`members` is overwritten with the member ids).
    pub server: EtcdServerConfig,
    /// How many members.
    pub members: u32,
    /// Every client's settings (`servers` is overwritten with the members).
    pub client: EtcdLockConfig,
}

/// The `[model]` keys of `kind = "etcd"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdKeys {
    kind: String,
    ttl_ms: f64,
    #[serde(default)]
    fencing: EtcdFencing,
    members: Option<u32>,
    tick_ms: Option<f64>,
    election_ms: Option<f64>,
    reads: Option<ReadsName>,
    checkpoint_ms: Option<f64>,
    recipe: Option<RecipeName>,
    recheck_after_wait: Option<bool>,
    request_timeout_ms: Option<f64>,
    stop_on_session_done: Option<bool>,
}

/// The `[storage]` keys of `mode = "etcd"`, the resource kept in the key space.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdResourceKeys {
    guard: Option<GuardName>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum EtcdFencing {
    #[default]
    None,
    Revision,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RecipeName {
    #[default]
    Mutex,
    Election,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ReadsName {
    #[default]
    ReadIndex,
    Lease,
}

/// The guard of a write to the resource kept in etcd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum GuardName {
    #[default]
    None,
    KeyExists,
    Owner,
}

impl Family for Etcd {
    const KIND: &'static str = "etcd";
    const NAME: &'static str = "etcd";
    const FENCING: &'static [Fencing] = &[Fencing {
        name: "revision",
        what: "the lock key's create revision",
        ordered: true,
    }];
    const RESOURCE_MODE: Option<&'static str> = Some("etcd");

    type Msg = Msg;
    type Timer = ServerTimer;
    type Node = EtcdServer;
    type Lock = EtcdLock;
    type Keys = EtcdKeys;
    type ResourceKeys = EtcdResourceKeys;

    fn resolve(k: &EtcdKeys, check: &mut Check) -> Etcd {
        debug_assert_eq!(k.kind, Self::KIND);
        let ttl = check.positive_ms("model.ttl_ms", k.ttl_ms);
        let members = k.members.unwrap_or(3);
        if !(1..=9).contains(&members) {
            check.problems.push(
                "model.members",
                format!("must be between 1 and 9, not {members}"),
            );
        }
        let tick = check.positive_ms("model.tick_ms", k.tick_ms.unwrap_or(100.0));
        let election = check.positive_ms("model.election_ms", k.election_ms.unwrap_or(1_000.0));
        let mut election_ticks = 10;
        if tick != Dur::ZERO && election != Dur::ZERO {
            let ticks = election.as_nanos() / tick.as_nanos();
            if ticks < 2 || election.as_nanos() % tick.as_nanos() != 0 {
                check.problems.push(
                    "model.election_ms",
                    format!(
                        "must be a whole number of ticks ({tick}), at least two, not {election}"
                    ),
                );
            } else {
                election_ticks = u32::try_from(ticks).unwrap_or(u32::MAX);
            }
        }
        let mut server = EtcdServerConfig::new(Vec::new());
        server.tick = tick;
        server.election_ticks = election_ticks;
        server.read_only = match k.reads.unwrap_or_default() {
            ReadsName::ReadIndex => ReadOnlyOption::Safe,
            ReadsName::Lease => ReadOnlyOption::LeaseBased,
        };
        server.checkpoint = k
            .checkpoint_ms
            .map(|v| check.positive_ms("model.checkpoint_ms", v));
        let mut client = EtcdLockConfig::new(Vec::new());
        client.ttl = ttl;
        client.recipe = match k.recipe.unwrap_or_default() {
            RecipeName::Mutex => Recipe::Mutex,
            RecipeName::Election => Recipe::Election,
        };
        client.recheck_after_wait = k.recheck_after_wait.unwrap_or(true);
        if let Some(t) = k.request_timeout_ms {
            client.request_timeout = check.positive_ms("model.request_timeout_ms", t);
        }
        client.fencing = k.fencing == EtcdFencing::Revision;
        client.stop_on_done = k.stop_on_session_done.unwrap_or(true);
        Etcd {
            server,
            members: members.clamp(1, 9),
            client,
        }
    }

    fn resource(keys: &EtcdResourceKeys, _: &mut Check) -> Option<ResourceGuard> {
        Some(match keys.guard.unwrap_or_default() {
            GuardName::None => ResourceGuard::None,
            GuardName::KeyExists => ResourceGuard::KeyExists,
            GuardName::Owner => ResourceGuard::Owner,
        })
    }

    fn layout(&self) -> Vec<(String, Role)> {
        numbered("etcd", self.members, Role::Server)
    }

    fn build(&self, _: Option<&ResourceGuard>) -> (Vec<EtcdServer>, EtcdLock) {
        let ids: Vec<NodeId> = (0..self.members).map(NodeId).collect();
        let config = EtcdServerConfig {
            members: ids.clone(),
            ..self.server.clone()
        };
        let nodes = ids
            .iter()
            .map(|&id| EtcdServer::new(config.clone(), id))
            .collect();
        let lock = EtcdLock::new(EtcdLockConfig {
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
            ("lock-waiting", MarkSite::Client),
            ("leader-ready", MarkSite::Server),
        ]
    }

    fn tokens(&self) -> Tokens {
        // The lock key's create revision is the lock's own token and increases with every
        // grant (etcd's "Notes on the usage of lock and lease", `why.md`).
        if self.client.fencing {
            Tokens::Ordered { monotonic: true }
        } else {
            Tokens::None
        }
    }

    fn ttl(&self) -> Dur {
        self.client.ttl
    }

    /// `Mutex.TryLock`; the Election has no try form.
    fn count_requests(&mut self) -> bool {
        self.client.count_requests = true;
        true
    }

    fn try_once(&mut self) -> bool {
        self.client.try_once = true;
        self.client.recipe == Recipe::Mutex
    }

    /// A second `concurrency.Mutex` on the same session and prefix (the Election is no lock
    /// to take twice).
    fn reentry(&self) -> Option<&'static str> {
        (self.client.recipe == Recipe::Mutex).then_some(
            "re-entered without a count: a Mutex on the same session finds its own key, and its \
             Unlock deletes it",
        )
    }

    /// `recipes.RWMutex` takes the Mutex's place (under the same prefix and session); the
    /// Election is no lock to read under.
    fn read_write(&self) -> bool {
        self.client.recipe == Recipe::Mutex
    }

    fn describe(&self) -> Vec<String> {
        let client = &self.client;
        let mut p = vec![
            format!("etcd ×{}", self.members),
            format!("ttl {}", client.ttl),
        ];
        if client.recipe == Recipe::Election {
            p.push("Election".to_string());
        }
        if client.try_once {
            p.push("try".to_string());
        }
        if !client.recheck_after_wait {
            p.push("no re-check after wait".to_string());
        }
        if client.fencing {
            p.push("revision-fenced".to_string());
        }
        // Scenario files stop on `Session.Done()` unless they say otherwise.
        if !client.stop_on_done {
            p.push("ignores Done".to_string());
        }
        if self.server.read_only == ReadOnlyOption::LeaseBased {
            p.push("lease reads".to_string());
        }
        p
    }

    fn describe_resource(guard: &ResourceGuard) -> String {
        match guard {
            ResourceGuard::None => "etcd (unguarded)",
            ResourceGuard::KeyExists => "etcd (guard key-exists)",
            ResourceGuard::Owner => "etcd (guard owner)",
        }
        .to_string()
    }
}
