//! `[network]` and `[[clock]]`: the links' latency, loss and duplication, the hosts' TCP, and
//! each node's clock.

use lockstep_sim::{LinkConfig, NodeConfig, NodeId, TcpConfig};

use super::Resolver;
use super::faults::drift;
use crate::scenario::schema::{ClockSection, NetworkSection};

pub(super) fn network(
    r: &mut Resolver,
    n: &NetworkSection,
) -> (LinkConfig, Vec<(NodeId, NodeId, LinkConfig)>) {
    let default = LinkConfig {
        latency: r.dist("network.latency_ms", n.latency_ms),
        loss_ppm: r.probability("network.loss", n.loss),
        duplicate_ppm: r.probability("network.duplicate", n.duplicate),
    };
    let mut links = Vec::new();
    for (i, l) in n.link.iter().enumerate() {
        let p = format!("network.link[{i}]");
        let from = r.nodes(&format!("{p}.from"), &l.from);
        let to = r.nodes(&format!("{p}.to"), &l.to);
        let config = LinkConfig {
            latency: l.latency_ms.map_or(default.latency.clone(), |d| {
                r.dist(&format!("{p}.latency_ms"), d)
            }),
            loss_ppm: l
                .loss
                .map_or(default.loss_ppm, |v| r.probability(&format!("{p}.loss"), v)),
            duplicate_ppm: l.duplicate.map_or(default.duplicate_ppm, |v| {
                r.probability(&format!("{p}.duplicate"), v)
            }),
        };
        for &a in &from {
            for &b in &to {
                if a != b {
                    links.push((a, b, config.clone()));
                }
            }
        }
    }
    (default, links)
}

/// The hosts' TCP: `tcp_retries2` (Linux allows 0-255; its default is 15) and
/// `tcp_user_timeout_ms`.
pub(super) fn tcp(r: &mut Resolver, n: &NetworkSection) -> TcpConfig {
    let mut tcp = TcpConfig::default();
    if let Some(v) = n.tcp_retries2 {
        if v > 255 {
            r.problems.push(
                "network.tcp_retries2",
                format!("must be at most 255 (Linux's limit), not {v}"),
            );
        } else {
            tcp.retries2 = v;
        }
    }
    if let Some(v) = n.tcp_user_timeout_ms {
        tcp.user_timeout = Some(r.positive_ms("network.tcp_user_timeout_ms", v));
    }
    tcp
}

pub(super) fn clocks(r: &mut Resolver, sections: &[ClockSection]) -> Vec<NodeConfig> {
    let mut configs: Vec<NodeConfig> = r
        .names
        .iter()
        .map(|n| NodeConfig::named(n.clone()))
        .collect();
    for (i, c) in sections.iter().enumerate() {
        let p = format!("clock[{i}]");
        let drift = drift(r, &format!("{p}.drift_ppm"), c.drift_ppm);
        let offset = r.signed_ms(&format!("{p}.offset_ms"), c.offset_ms);
        for node in r.nodes(&format!("{p}.node"), &c.node) {
            configs[node.index()].drift_ppm = drift;
            configs[node.index()].wall_offset_ns = offset;
        }
    }
    configs
}
