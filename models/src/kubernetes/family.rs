//! The Kubernetes family: etcd members `etcd-1..N`, API servers `apiserver-1..M` (group
//! `apiservers`) and one client-go elector per workload client (docs/families/kubernetes.md).

use std::collections::BTreeMap;

use lockstep_sim::{Dur, NodeId};
use serde::Deserialize;

use super::apiserver::ApiServer;
use super::elector::{
    client_number, Elector, ElectorConfig, Expiry, LeaseDurationFrom, Timing, TokenFrom,
};
use super::{KubeNode, Msg, Timer};
use crate::etcd::server::{EtcdServer, EtcdServerConfig};
use crate::family::{numbered, Counter, Family, Fencing, MarkSite, Role, Tokens};
use crate::keys::{Check, NoKeys};
use crate::lock::NoResource;

/// The Kubernetes family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kubernetes {
    /// How many etcd members.
    pub members: u32,
    /// How many API servers.
    pub apiservers: u32,
    /// Every elector's settings (`apiservers` is overwritten with the API servers' ids).
    pub elector: ElectorConfig,
}

/// The `[model]` keys of `kind = "kubernetes"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesKeys {
    kind: String,
    ttl_ms: f64,
    renew_deadline_ms: Option<f64>,
    retry_period_ms: Option<f64>,
    members: Option<u32>,
    apiservers: Option<u32>,
    #[serde(default)]
    fencing: FencingName,
    release_on_cancel: Option<bool>,
    expiry: Option<ExpiryName>,
    lease_duration: Option<LeaseDurationName>,
    participants: Option<BTreeMap<String, ParticipantKeys>>,
}

/// `[model.participants.client-N]`: one elector's own settings.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParticipantKeys {
    ttl_ms: Option<f64>,
    renew_deadline_ms: Option<f64>,
    retry_period_ms: Option<f64>,
    expiry: Option<ExpiryName>,
    lease_duration: Option<LeaseDurationName>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum FencingName {
    #[default]
    None,
    Transitions,
    ResourceVersion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ExpiryName {
    ObservedTime,
    RenewTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum LeaseDurationName {
    Record,
    Own,
}

/// The checks of one elector's timing under `path` (`model`, `model.participants.client-2`),
/// from `base` and the keys given: client-go's `NewLeaderElector` validation
/// (`leaderelection.go`): LeaseDuration > RenewDeadline > JitterFactor × RetryPeriod > 0.
fn timing(check: &mut Check, path: &str, base: Timing, keys: &ParticipantKeys) -> Timing {
    let ParticipantKeys {
        ttl_ms: ttl,
        renew_deadline_ms: rd_key,
        retry_period_ms: rp_key,
        expiry,
        lease_duration: ld_from,
    } = *keys;
    let mut t = base;
    if let Some(v) = ttl {
        let key = format!("{path}.ttl_ms");
        t.lease_duration = check.positive_ms(&key, v);
        if v.is_finite() && v > 0.0 && v < 1_000.0 {
            check.problems.push(
                key,
                format!(
                    "must be at least 1000 ms, not {v}: the Lease records whole seconds \
                     (leaseDurationSeconds)"
                ),
            );
        }
    }
    if let Some(v) = rd_key {
        t.renew_deadline = check.positive_ms(&format!("{path}.renew_deadline_ms"), v);
    }
    if let Some(v) = rp_key {
        t.retry_period = check.positive_ms(&format!("{path}.retry_period_ms"), v);
    }
    if let Some(e) = expiry {
        t.expiry = match e {
            ExpiryName::ObservedTime => Expiry::ObservedTime,
            ExpiryName::RenewTime => Expiry::RenewTime,
        };
    }
    if let Some(l) = ld_from {
        t.lease_duration_from = match l {
            LeaseDurationName::Record => LeaseDurationFrom::Record,
            LeaseDurationName::Own => LeaseDurationFrom::Own,
        };
    }
    let (ld, rd, rp) = (t.lease_duration, t.renew_deadline, t.retry_period);
    // A participant inherits what it does not set: its own problem only when it sets one of
    // the three (the section's path, short enough to be shown whole).
    let (at, prefix) = if path == "model" {
        (None, "model.")
    } else if ttl.or(rd_key).or(rp_key).is_some() {
        (Some(path), "its ")
    } else {
        return t;
    };
    let shown = |d: Dur| format!("{} ms", d.as_nanos() as f64 / 1e6);
    if ld != Dur::ZERO && rd != Dur::ZERO && ld <= rd {
        check.problems.push(
            at.map_or_else(|| "model.ttl_ms".to_string(), str::to_string),
            format!(
                "{prefix}ttl_ms ({}) must be greater than {prefix}renew_deadline_ms ({}), as \
                 client-go requires",
                shown(ld),
                shown(rd)
            ),
        );
    }
    let jittered = rp.mul_div(12, 10);
    if rd != Dur::ZERO && rp != Dur::ZERO && rd <= jittered {
        check.problems.push(
            at.map_or_else(|| "model.renew_deadline_ms".to_string(), str::to_string),
            format!(
                "{prefix}renew_deadline_ms ({}) must be greater than 1.2 × \
                 {prefix}retry_period_ms ({}), as client-go requires (JitterFactor)",
                shown(rd),
                shown(rp)
            ),
        );
    }
    t
}

impl Family for Kubernetes {
    const KIND: &'static str = "kubernetes";
    const NAME: &'static str = "Kubernetes Lease";
    const FENCING: &'static [Fencing] = &[
        Fencing {
            name: "transitions",
            what: "the Lease's leaseTransitions of the holder's term",
            ordered: true,
        },
        Fencing {
            name: "resource-version",
            what: "the resourceVersion of the write that made the holder leader",
            ordered: true,
        },
    ];

    type Msg = Msg;
    type Timer = Timer;
    type Node = KubeNode;
    type Lock = Elector;
    type Keys = KubernetesKeys;
    type ResourceKeys = NoKeys;

    fn resolve(k: &KubernetesKeys, check: &mut Check) -> Kubernetes {
        debug_assert_eq!(k.kind, Self::KIND);
        let own = ParticipantKeys {
            ttl_ms: Some(k.ttl_ms),
            renew_deadline_ms: k.renew_deadline_ms,
            retry_period_ms: k.retry_period_ms,
            expiry: k.expiry,
            lease_duration: k.lease_duration,
        };
        let base = timing(check, "model", Timing::defaults(), &own);
        let members = check.count("model.members", k.members.unwrap_or(3), 1, 9);
        let apiservers = check.count("model.apiservers", k.apiservers.unwrap_or(1), 1, 9);
        let mut participants = Vec::new();
        for (name, p) in k.participants.iter().flatten() {
            let path = format!("model.participants.{name}");
            let n = client_number(name).filter(|&n| n >= 1 && name == &format!("client-{n}"));
            let t = timing(check, &path, base, p);
            match n {
                Some(n) => participants.push((n, t)),
                None => check.problems.push(
                    path,
                    format!("`{name}` is not a workload client's name: expected client-1, client-2, ..."),
                ),
            }
        }
        Kubernetes {
            members,
            apiservers,
            elector: ElectorConfig {
                apiservers: Vec::new(),
                timing: base,
                participants,
                release_on_cancel: k.release_on_cancel.unwrap_or(false),
                fencing: match k.fencing {
                    FencingName::None => TokenFrom::None,
                    FencingName::Transitions => TokenFrom::Transitions,
                    FencingName::ResourceVersion => TokenFrom::ResourceVersion,
                },
            },
        }
    }

    fn resource(_: &NoKeys, _: &mut Check) -> Option<NoResource> {
        None
    }

    fn named_nodes(&self) -> Vec<(String, String, Role)> {
        // The loader checked each name is `client-<n>`, so the name is the key as written.
        let p = &self.elector.participants;
        p.iter()
            .map(|&(n, _)| {
                let name = format!("client-{n}");
                (format!("model.participants.{name}"), name, Role::Client)
            })
            .collect()
    }

    fn layout(&self) -> Vec<(String, Role)> {
        let mut nodes = numbered("etcd", self.members, Role::Server);
        nodes.extend(numbered(
            "apiserver",
            self.apiservers,
            Role::Coordinator {
                group: "apiservers",
            },
        ));
        nodes
    }

    fn played(&self) -> &'static [&'static str] {
        &[crate::family::played::LEADER]
    }

    fn groups(&self) -> &'static [&'static str] {
        &["apiservers"]
    }

    fn build(&self, _: Option<&NoResource>) -> (Vec<KubeNode>, Elector) {
        let ids: Vec<NodeId> = (0..self.members).map(NodeId).collect();
        let config = EtcdServerConfig::new(ids.clone());
        let mut nodes: Vec<KubeNode> = ids
            .iter()
            .map(|&id| KubeNode::Etcd(EtcdServer::new(config.clone(), id)))
            .collect();
        let apis: Vec<NodeId> = (self.members..self.members + self.apiservers)
            .map(NodeId)
            .collect();
        nodes.extend(
            apis.iter()
                .map(|_| KubeNode::ApiServer(ApiServer::new(ids.clone()))),
        );
        let elector = Elector::new(ElectorConfig {
            apiservers: apis,
            ..self.elector.clone()
        });
        (nodes, elector)
    }

    fn marks(&self) -> &'static [(&'static str, MarkSite)] {
        &[
            ("renewed", MarkSite::Client),
            ("leader-ready", MarkSite::Server),
        ]
    }

    fn tokens(&self) -> Tokens {
        // Both tokens increase with every new term: leaseTransitions by one, and the
        // resourceVersion of the winning write with etcd's revision.
        match self.elector.fencing {
            TokenFrom::None => Tokens::None,
            TokenFrom::Transitions | TokenFrom::ResourceVersion => {
                Tokens::Ordered { monotonic: true }
            }
        }
    }

    fn ttl(&self) -> Dur {
        self.elector
            .participants
            .iter()
            .map(|(_, t)| t.lease_duration)
            .fold(self.elector.timing.lease_duration, Dur::max)
    }

    fn expiry_wall_clocks(&self) -> &'static [Role] {
        let t = &self.elector;
        let wall = t.timing.expiry == Expiry::RenewTime
            || t.participants.iter().any(|(_, p)| p.expiry == Expiry::RenewTime);
        if wall { &[Role::Client] } else { &[] }
    }

    fn counters(&self) -> &'static [Counter] {
        &[
            Counter {
                name: "conflicts",
                per: None,
            },
            Counter {
                name: "record-observed",
                per: None,
            },
            Counter {
                name: "renewed",
                per: None,
            },
        ]
    }

    fn describe(&self) -> Vec<String> {
        let e = &self.elector;
        let t = &e.timing;
        let mut p = vec![
            format!("kubernetes etcd ×{} apiserver ×{}", self.members, self.apiservers),
            format!(
                "lease {}/{}/{}",
                t.lease_duration, t.renew_deadline, t.retry_period
            ),
        ];
        if t.expiry == Expiry::RenewTime {
            p.push("renew-time expiry".to_string());
        }
        if t.lease_duration_from == LeaseDurationFrom::Own {
            p.push("own lease duration".to_string());
        }
        if !e.participants.is_empty() {
            p.push(format!("{} participants overridden", e.participants.len()));
        }
        if e.release_on_cancel {
            p.push("ReleaseOnCancel".to_string());
        }
        match e.fencing {
            TokenFrom::None => {}
            TokenFrom::Transitions => p.push("transitions-fenced".to_string()),
            TokenFrom::ResourceVersion => p.push("resourceVersion-fenced".to_string()),
        }
        p
    }

    fn describe_resource(resource: &NoResource) -> String {
        match *resource {}
    }
}
