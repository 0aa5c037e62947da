//! The ZooKeeper family: an ensemble of servers named `zk-1`, `zk-2`, ... and clients running
//! Curator's lock recipe (docs/scenarios.md, `zookeeper`).

use lockstep_sim::{Dur, NodeId};
use serde::Deserialize;

use super::client::{
    LOCK_RELEASES, Protection, StopWorkOn, WATCH_NOTIFICATIONS, Watch, ZooKeeperLock,
    ZooKeeperLockConfig,
};
use super::server::{ZooKeeperServer, ZooKeeperServerConfig};
use super::{Msg, ServerTimer};
use crate::family::{numbered, Counter, Family, Fencing, MarkSite, Role, Tokens};
use crate::keys::{Check, NoKeys};
use crate::lock::NoResource;

/// The ZooKeeper family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeper {
    /// The ensemble's settings (`members` is overwritten with the server ids).
    pub server: ZooKeeperServerConfig,
    /// How many servers.
    pub members: u32,
    /// Every client's settings (`servers` is overwritten with the ensemble).
    pub client: ZooKeeperLockConfig,
}

/// The `[model]` keys of `kind = "zookeeper"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZooKeeperKeys {
    kind: String,
    ttl_ms: f64,
    #[serde(default)]
    fencing: ZooKeeperFencing,
    members: Option<u32>,
    tick_ms: Option<f64>,
    sync_limit: Option<u32>,
    min_session_timeout_ms: Option<f64>,
    max_session_timeout_ms: Option<f64>,
    stop_work_on: Option<StopWorkOnName>,
    watch: Option<WatchName>,
    protection: Option<ProtectionName>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ZooKeeperFencing {
    #[default]
    None,
    Czxid,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum StopWorkOnName {
    #[default]
    Never,
    Lost,
    Suspended,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum WatchName {
    #[default]
    Predecessor,
    Parent,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ProtectionName {
    Guid,
    #[default]
    GuidAndSession,
}

impl Family for ZooKeeper {
    const KIND: &'static str = "zookeeper";
    const NAME: &'static str = "ZooKeeper";
    const FENCING: &'static [Fencing] = &[Fencing {
        name: "czxid",
        what: "the lock node's creation zxid",
        ordered: true,
    }];

    type Msg = Msg;
    type Timer = ServerTimer;
    type Node = ZooKeeperServer;
    type Lock = ZooKeeperLock;
    type Keys = ZooKeeperKeys;
    type ResourceKeys = NoKeys;

    fn resolve(k: &ZooKeeperKeys, check: &mut Check) -> ZooKeeper {
        debug_assert_eq!(k.kind, Self::KIND);
        let ttl = check.positive_ms("model.ttl_ms", k.ttl_ms);
        let members = k.members.unwrap_or(3);
        if !(1..=9).contains(&members) {
            check.problems.push(
                "model.members",
                format!("must be between 1 and 9, not {members}"),
            );
        }
        let tick = check.positive_ms("model.tick_ms", k.tick_ms.unwrap_or(2_000.0));
        let mut server = ZooKeeperServerConfig::with_tick(Vec::new(), tick);
        let sync_limit = k.sync_limit.unwrap_or(5);
        if !(1..=100).contains(&sync_limit) {
            check.problems.push(
                "model.sync_limit",
                format!("must be between 1 and 100 ticks, not {sync_limit}"),
            );
        }
        server.sync_limit = sync_limit.clamp(1, 100);
        if let Some(v) = k.min_session_timeout_ms {
            server.min_session_timeout = check.positive_ms("model.min_session_timeout_ms", v);
        }
        if let Some(v) = k.max_session_timeout_ms {
            server.max_session_timeout = check.positive_ms("model.max_session_timeout_ms", v);
        }
        if server.min_session_timeout > server.max_session_timeout {
            check.problems.push(
                "model.max_session_timeout_ms",
                format!(
                    "must not be below the minimum session timeout ({})",
                    server.min_session_timeout
                ),
            );
        }
        let mut client = ZooKeeperLockConfig::new(Vec::new());
        client.session_timeout = ttl;
        client.stop_work_on = match k.stop_work_on.unwrap_or_default() {
            StopWorkOnName::Never => StopWorkOn::Never,
            StopWorkOnName::Lost => StopWorkOn::Lost,
            StopWorkOnName::Suspended => StopWorkOn::Suspended,
        };
        client.watch = match k.watch.unwrap_or_default() {
            WatchName::Predecessor => Watch::Predecessor,
            WatchName::Parent => Watch::Parent,
        };
        client.protection = match k.protection.unwrap_or_default() {
            ProtectionName::Guid => Protection::Guid,
            ProtectionName::GuidAndSession => Protection::GuidAndSession,
        };
        client.fencing = k.fencing == ZooKeeperFencing::Czxid;
        ZooKeeper {
            server,
            members: members.clamp(1, 9),
            client,
        }
    }

    fn resource(_: &NoKeys, _: &mut Check) -> Option<NoResource> {
        None
    }

    fn layout(&self) -> Vec<(String, Role)> {
        numbered("zk", self.members, Role::Server)
    }

    fn build(&self, _: Option<&NoResource>) -> (Vec<ZooKeeperServer>, ZooKeeperLock) {
        let ids: Vec<NodeId> = (0..self.members).map(NodeId).collect();
        let config = ZooKeeperServerConfig {
            members: ids.clone(),
            ..self.server.clone()
        };
        let nodes = ids
            .iter()
            .map(|&id| ZooKeeperServer::new(config.clone(), id))
            .collect();
        let lock = ZooKeeperLock::new(ZooKeeperLockConfig {
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
            ("lock-create-sent", MarkSite::Client),
            ("lock-waiting", MarkSite::Client),
            ("suspended", MarkSite::Client),
            ("zk-leader-ready", MarkSite::Server),
        ]
    }

    fn tokens(&self) -> Tokens {
        // The lock node's czxid, the zxid of its create, increases with every grant.
        if self.client.fencing {
            Tokens::Ordered { monotonic: true }
        } else {
            Tokens::None
        }
    }

    /// Curator's `acquire(0, unit)`.
    fn count_requests(&mut self) -> bool {
        self.client.count_requests = true;
        true
    }

    fn try_once(&mut self) -> bool {
        self.client.try_once = true;
        true
    }

    fn reentry(&self) -> Option<&'static str> {
        Some("counted in the client (Curator's lockCount): no round trip")
    }

    /// Curator's `InterProcessReadWriteLock`: its nodes `__READ__` and `__WRIT__` under the
    /// same parent.
    fn read_write(&self) -> bool {
        true
    }

    fn counters(&self) -> &'static [Counter] {
        &[
            Counter {
                name: LOCK_RELEASES,
                per: None,
            },
            Counter {
                name: WATCH_NOTIFICATIONS,
                per: Some(LOCK_RELEASES),
            },
        ]
    }

    fn ttl(&self) -> Dur {
        self.client.session_timeout
    }

    fn describe(&self) -> Vec<String> {
        let client = &self.client;
        let mut p = vec![
            format!("zookeeper ×{}", self.members),
            format!("session {}", client.session_timeout),
        ];
        match client.stop_work_on {
            StopWorkOn::Never => {}
            StopWorkOn::Lost => p.push("stops on LOST".to_string()),
            StopWorkOn::Suspended => p.push("stops on SUSPENDED".to_string()),
        }
        if client.watch == Watch::Parent {
            p.push("parent watch".to_string());
        }
        if client.protection == Protection::Guid {
            p.push("guid-only protection".to_string());
        }
        if client.fencing {
            p.push("czxid-fenced".to_string());
        }
        if client.try_once {
            p.push("try".to_string());
        }
        p
    }

    fn describe_resource(resource: &NoResource) -> String {
        match *resource {}
    }
}
