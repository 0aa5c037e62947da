//! The network: per directed link latency, loss and duplication, partitions, and TCP.
//!
//! Two kinds of message cross a link. Almost everything is a **segment of a TCP connection**
//! (`Env::send`): in order, exactly once, never lost while the connection lives. A segment
//! that a partition or the link's loss takes is retransmitted by the sender's kernel on
//! Linux's schedule ([`TcpConfig`], `net/ipv4/tcp_timer.c`): the first retransmission one RTO
//! after it was sent, each next one twice as far, at most [`TcpConfig::RTO_MAX`] apart; it
//! arrives at the first retransmission that finds the link open, and everything sent behind
//! it arrives after it. When the retransmissions run out ([`TcpConfig::abort_after`]) the
//! sender's kernel aborts the connection. A **datagram** (`Env::send_datagram`: Consul's
//! gossip, a TCP keepalive probe) draws loss and duplication and its own latency, so it may be
//! lost, doubled or overtaken.
//!
//! At arrival the world asks whether the link is blocked. A partition in drop mode (iptables
//! DROP) loses a datagram and makes a segment wait for its retransmission; in hold mode (an
//! idealisation of retransmission with no back-off) both wait in the link's queue and are
//! delivered in order at the heal.

use serde::{Deserialize, Serialize};

use crate::dist::Distribution;
use crate::rng::Rng;
use crate::time::{Dur, Time};
use crate::world::NodeId;

/// How one directed link behaves.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LinkConfig {
    /// One-way latency of each message.
    pub latency: Distribution,
    /// Probability that a message is lost, per million.
    pub loss_ppm: u32,
    /// Probability that a message is delivered twice, per million.
    pub duplicate_ppm: u32,
}

impl Default for LinkConfig {
    fn default() -> LinkConfig {
        LinkConfig {
            latency: Distribution::ZERO,
            loss_ppm: 0,
            duplicate_ppm: 0,
        }
    }
}

/// What a blocked link does with a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionMode {
    /// Packets are dropped (iptables DROP): a datagram is lost, a TCP segment is
    /// retransmitted by its sender until it gets through or the connection is aborted.
    #[default]
    Drop,
    /// Messages wait and are delivered in order at the heal: the idealised form of
    /// retransmission, with no back-off.
    Hold,
}

/// The TCP of every host (Linux's, `net/ipv4/tcp_timer.c`, `include/net/tcp.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TcpConfig {
    /// `net.ipv4.tcp_retries2`: retransmissions of the same data before the connection is
    /// aborted, counted as time (`tcp_model_timeout`); 15 by default.
    pub retries2: u32,
    /// `TCP_USER_TIMEOUT`: abort when data stays unacknowledged this long instead.
    pub user_timeout: Option<Dur>,
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            retries2: 15,
            user_timeout: None,
        }
    }
}

impl TcpConfig {
    /// `TCP_RTO_MIN`: the floor of the retransmission timeout.
    pub const RTO_MIN: Dur = Dur::from_millis(200);
    /// `TCP_RTO_MAX`: the cap of its exponential back-off.
    pub const RTO_MAX: Dur = Dur::from_secs(120);

    /// How long after a segment was first sent, with nothing acknowledged since, its
    /// connection is aborted: `TCP_USER_TIMEOUT` when set, else the time `retries2`
    /// back-offs from `TCP_RTO_MIN` would take (`tcp_model_timeout`: 924.6 s for 15).
    pub fn abort_after(&self) -> Dur {
        if let Some(t) = self.user_timeout {
            return t;
        }
        // `ilog2(TCP_RTO_MAX / TCP_RTO_MIN)`: the back-offs that still double.
        let thresh = (Self::RTO_MAX.as_nanos() / Self::RTO_MIN.as_nanos()).ilog2();
        let min = Self::RTO_MIN.as_nanos();
        let nanos = if self.retries2 <= thresh {
            ((2u64 << self.retries2) - 1) * min
        } else {
            ((2u64 << thresh) - 1) * min
                + u64::from(self.retries2 - thresh) * Self::RTO_MAX.as_nanos()
        };
        Dur::from_nanos(nanos)
    }

    /// The retransmission timeout of a connection whose round trip is `rtt`: the smoothed
    /// RTT plus the variance term, which `tcp_set_rto` floors at `TCP_RTO_MIN`
    /// (`rttvar_us = max(mdev_max_us, rto_min)`), in whole jiffies rounded up
    /// (`usecs_to_jiffies`; 204 ms over loopback, as measured). lockstep's links have no
    /// measured variance, so the term is the floor: an idealisation for links whose jitter is
    /// above 50 ms.
    pub fn rto(rtt: Dur) -> Dur {
        let nanos = (rtt + Self::RTO_MIN).as_nanos().div_ceil(Self::JIFFY) * Self::JIFFY;
        Dur::from_nanos(nanos).min(Self::RTO_MAX)
    }

    /// A kernel tick at HZ = 250, Debian's.
    const JIFFY: u64 = 4_000_000;

    /// How long after its `fired`-th firing (from 1) the retransmission timer of a stalled
    /// segment fires again, for a connection whose RTO is `rto`. The first firing, one RTO
    /// after the send, is Linux's tail loss probe (`tcp_send_loss_probe`); the RTO timer
    /// restarts from it, so the first RTO retransmission comes one RTO later, and each next one
    /// twice as far as the last, at most `TCP_RTO_MAX`: at 1, 2, 4, 8 ... RTOs after the send.
    /// (Measured on Linux 6.18 over loopback: 0.21, 0.41, 0.83, 1.66, 3.33, 6.7, 13.4 s;
    /// docs/conformance.md.)
    pub fn back_off(rto: Dur, fired: u32) -> Dur {
        let doublings = fired.saturating_sub(1).min(20);
        rto.mul_div(1 << doublings, 1).min(Self::RTO_MAX)
    }

    /// When a kernel timer set at `now` for `delay` fires: Linux's timer wheel
    /// (`kernel/time/timer.c`, `calc_index`) rounds an expiry up to the granularity of the
    /// wheel level its delay falls in, so long timers fire late: with HZ = 250 (Debian's
    /// kernels) by up to 4 ms below 252 ms, 32 ms below 2.016 s, 256 ms below 16.128 s,
    /// 2.048 s below 129 s, and 16.384 s beyond.
    pub fn timer_wheel(now: Time, delay: Dur) -> Time {
        const JIFFY: u64 = TcpConfig::JIFFY;
        let now_j = now.as_nanos().div_ceil(JIFFY);
        let delta = delay.as_nanos().div_ceil(JIFFY);
        // Level n holds deltas below 63 × 8^n jiffies, at a granularity of 8^n.
        let mut gran = 1u64;
        while delta >= 63 * gran && gran < 8u64.pow(8) {
            gran *= 8;
        }
        let expires = now_j + delta;
        let fires = if gran == 1 {
            expires
        } else {
            (expires + gran) / gran * gran
        };
        Time::from_nanos(fires.saturating_mul(JIFFY))
    }

    /// How long a kernel timer set for `delay` on a host whose clock reads `now_ns` really
    /// takes ([`TcpConfig::timer_wheel`]): for timers a model keeps itself, such as TCP
    /// keepalive's.
    pub fn kernel_delay(now_ns: i64, delay: Dur) -> Dur {
        let now = Time::from_nanos(now_ns.max(0) as u64);
        Self::timer_wheel(now, delay).saturating_since(now)
    }
}

/// Which links a partition blocks, named by nodes. Shapes follow Jepsen's nemeses; the ones
/// with a random split draw it from the world's fault stream when the fault is applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// `node` can reach no one and no one can reach it.
    Isolate {
        /// The isolated node.
        node: NodeId,
    },
    /// Every group is cut from every other group, both ways; unlisted nodes are untouched.
    Split {
        /// Two or more disjoint groups.
        groups: Vec<Vec<NodeId>>,
    },
    /// Messages from `from` to `to` are blocked; the other direction still works.
    OneWay {
        /// Senders whose messages are blocked.
        from: Vec<NodeId>,
        /// Receivers that no longer hear them.
        to: Vec<NodeId>,
    },
    /// A random minority of `nodes` (`len / 2` of them) is cut from the rest.
    MajorityMinority {
        /// The nodes to split.
        nodes: Vec<NodeId>,
    },
    /// Two random halves of `nodes`, with one node in the middle that still reaches both.
    Bridge {
        /// The nodes to split.
        nodes: Vec<NodeId>,
    },
    /// `nodes` on a random ring: each sees its nearest neighbours, a majority counting itself,
    /// and no two see the same majority.
    MajoritiesRing {
        /// The nodes to arrange.
        nodes: Vec<NodeId>,
    },
}

impl Shape {
    /// The directed links `(from, to)` this shape blocks in a world of `node_count` nodes,
    /// drawing any random split from `rng`. Returned sorted and without duplicates.
    pub fn links(&self, node_count: usize, rng: &mut Rng) -> Vec<(NodeId, NodeId)> {
        self.resolve(node_count, rng).links
    }

    /// Resolves the shape: the links it blocks and the side it cuts off.
    pub fn resolve(&self, node_count: usize, rng: &mut Rng) -> Cut {
        let mut links = Vec::new();
        let mut cut = |a: &[NodeId], b: &[NodeId], both: bool| {
            for &x in a {
                for &y in b {
                    if x != y {
                        links.push((x, y));
                        if both {
                            links.push((y, x));
                        }
                    }
                }
            }
        };
        let cut_off: Vec<NodeId> = match self {
            Shape::Isolate { node } => {
                let others: Vec<NodeId> = (0..node_count as u32).map(NodeId).collect();
                cut(&[*node], &others, true);
                vec![*node]
            }
            Shape::Split { groups } => {
                for (i, a) in groups.iter().enumerate() {
                    for b in &groups[i + 1..] {
                        cut(a, b, true);
                    }
                }
                // Every group but the (first) largest is cut off from it.
                let largest = (0..groups.len()).rev().max_by_key(|&i| groups[i].len());
                groups
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| Some(i) != largest)
                    .flat_map(|(_, g)| g.iter().copied())
                    .collect()
            }
            Shape::OneWay { from, to } => {
                cut(from, to, false);
                from.clone()
            }
            Shape::MajorityMinority { nodes } => {
                let mut v = nodes.clone();
                rng.shuffle(&mut v);
                let (minority, majority) = v.split_at(v.len() / 2);
                cut(minority, majority, true);
                minority.to_vec()
            }
            Shape::Bridge { nodes } => {
                let mut v = nodes.clone();
                rng.shuffle(&mut v);
                let half = v.len() / 2;
                let (left, rest) = v.split_at(half);
                // rest[0] is the bridge; it keeps both sides.
                if let Some((_, right)) = rest.split_first() {
                    cut(left, right, true);
                }
                left.to_vec()
            }
            Shape::MajoritiesRing { nodes } => {
                let mut v = nodes.clone();
                rng.shuffle(&mut v);
                let n = v.len();
                // Each node must see a majority (n/2 + 1) counting itself: neighbours within
                // distance k on both sides, 2k + 1 >= n/2 + 1.
                let k = (n / 2).div_ceil(2);
                for i in 0..n {
                    for j in 0..n {
                        let d = i.abs_diff(j).min(n - i.abs_diff(j));
                        if d > k {
                            links.push((v[i], v[j]));
                        }
                    }
                }
                // No side is cut off as a whole: every node loses part of the cluster.
                v
            }
        };
        links.sort();
        links.dedup();
        let mut cut_off = cut_off;
        cut_off.sort();
        cut_off.dedup();
        Cut { links, cut_off }
    }

    /// Every node the shape names.
    pub fn nodes(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = match self {
            Shape::Isolate { node } => vec![*node],
            Shape::Split { groups } => groups.iter().flatten().copied().collect(),
            Shape::OneWay { from, to } => from.iter().chain(to).copied().collect(),
            Shape::MajorityMinority { nodes }
            | Shape::Bridge { nodes }
            | Shape::MajoritiesRing { nodes } => nodes.clone(),
        };
        v.sort();
        v.dedup();
        v
    }
}

/// A resolved partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The blocked directed links, sorted.
    pub links: Vec<(NodeId, NodeId)>,
    /// The side that is cut off (the isolated node, the minority, the senders of a one-way
    /// cut); the nodes a fault takes away, for failover accounting.
    pub cut_off: Vec<NodeId>,
}

/// The probability that at least one of two independent chances happens, `1 - (1 - a)(1 - b)`,
/// in parts per million. The product of the complements rounds down, so the result rounds up,
/// and a zero on either side gives the other exactly.
pub fn combine_ppm(a: u32, b: u32) -> u32 {
    const M: u64 = 1_000_000;
    let (a, b) = (u64::from(a).min(M), u64::from(b).min(M));
    let neither = (M - a) * (M - b) / M;
    (M - neither) as u32
}

/// The state of every directed link: configuration and how many partitions block it.
#[derive(Clone, Debug)]
pub(crate) struct Links {
    n: usize,
    config: Vec<LinkConfig>,
    /// Extra one-way delay from network faults (a slow switch, a clogged link).
    extra: Vec<Dur>,
    drop_blocks: Vec<u16>,
    hold_blocks: Vec<u16>,
    /// Degrades in force, in the order they began. Few at a time, so a send looks each up
    /// rather than keeping per-link sums, and every end removes exactly its own share.
    degrades: Vec<Degrade>,
}

/// One degrade in force: extra loss and duplication on its links.
#[derive(Clone, Debug)]
struct Degrade {
    id: u32,
    /// Sorted, without self-links.
    links: Vec<(NodeId, NodeId)>,
    loss_ppm: u32,
    duplicate_ppm: u32,
}

/// What a partition does to one arriving message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    Open,
    Drop,
    Hold,
}

impl Links {
    pub(crate) fn new(n: usize, default: &LinkConfig) -> Links {
        Links {
            n,
            config: vec![default.clone(); n * n],
            extra: vec![Dur::ZERO; n * n],
            drop_blocks: vec![0; n * n],
            hold_blocks: vec![0; n * n],
            degrades: Vec::new(),
        }
    }

    fn idx(&self, from: NodeId, to: NodeId) -> usize {
        from.index() * self.n + to.index()
    }

    pub(crate) fn set_config(&mut self, from: NodeId, to: NodeId, config: LinkConfig) {
        let i = self.idx(from, to);
        self.config[i] = config;
    }

    pub(crate) fn config(&self, from: NodeId, to: NodeId) -> &LinkConfig {
        &self.config[self.idx(from, to)]
    }

    /// When something put on the link `from → to` at `now` arrives: a latency drawn from
    /// `rng`, plus the link's extra delay.
    pub(crate) fn arrival(&self, now: Time, from: NodeId, to: NodeId, rng: &mut Rng) -> Time {
        let latency = self.config(from, to).latency.sample(rng);
        now.saturating_add(latency.saturating_add(self.extra(from, to)))
    }

    /// A typical round trip of the connection `from ⇄ to` now: each direction's typical
    /// latency and extra delay.
    pub(crate) fn rtt(&self, from: NodeId, to: NodeId) -> Dur {
        let one = |a, b| {
            self.config(a, b)
                .latency
                .typical()
                .saturating_add(self.extra(a, b))
        };
        one(from, to).saturating_add(one(to, from))
    }

    pub(crate) fn extra(&self, from: NodeId, to: NodeId) -> Dur {
        self.extra[self.idx(from, to)]
    }

    pub(crate) fn add_extra(&mut self, from: NodeId, to: NodeId, d: Dur, add: bool) {
        let i = self.idx(from, to);
        self.extra[i] = if add {
            self.extra[i] + d
        } else {
            self.extra[i].saturating_sub(d)
        };
    }

    /// The loss and duplication chances of a message sent now from `from` to `to`, in ppm:
    /// the link's own, combined with every degrade in force on it. Without a degrade on the
    /// link these are exactly the configured values, so sends draw as they always did.
    pub(crate) fn loss_and_duplicate(&self, from: NodeId, to: NodeId) -> (u32, u32) {
        let config = self.config(from, to);
        let (mut loss, mut duplicate) = (config.loss_ppm, config.duplicate_ppm);
        for d in &self.degrades {
            if d.links.binary_search(&(from, to)).is_ok() {
                loss = combine_ppm(loss, d.loss_ppm);
                duplicate = combine_ppm(duplicate, d.duplicate_ppm);
            }
        }
        (loss, duplicate)
    }

    /// Puts a degrade in force on `links` under `id`.
    pub(crate) fn add_degrade(
        &mut self,
        id: u32,
        mut links: Vec<(NodeId, NodeId)>,
        loss_ppm: u32,
        duplicate_ppm: u32,
    ) {
        links.sort();
        links.dedup();
        self.degrades.push(Degrade {
            id,
            links,
            loss_ppm,
            duplicate_ppm,
        });
    }

    /// Ends the degrade `id`; false if it is not in force.
    pub(crate) fn remove_degrade(&mut self, id: u32) -> bool {
        let before = self.degrades.len();
        self.degrades.retain(|d| d.id != id);
        self.degrades.len() != before
    }

    pub(crate) fn gate(&self, from: NodeId, to: NodeId) -> Gate {
        let i = self.idx(from, to);
        if self.drop_blocks[i] > 0 {
            Gate::Drop
        } else if self.hold_blocks[i] > 0 {
            Gate::Hold
        } else {
            Gate::Open
        }
    }

    /// Adds (or, with `block == false`, removes) one partition's blocks.
    pub(crate) fn block(&mut self, links: &[(NodeId, NodeId)], mode: PartitionMode, block: bool) {
        for &(a, b) in links {
            let i = self.idx(a, b);
            let counter = match mode {
                PartitionMode::Drop => &mut self.drop_blocks[i],
                PartitionMode::Hold => &mut self.hold_blocks[i],
            };
            *counter = if block {
                *counter + 1
            } else {
                counter.checked_sub(1).expect("unbalanced heal")
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u32]) -> Vec<NodeId> {
        v.iter().map(|&i| NodeId(i)).collect()
    }

    #[test]
    fn combined_chances_are_independent_and_exact_at_the_edges() {
        assert_eq!(combine_ppm(0, 0), 0);
        assert_eq!(combine_ppm(0, 123_456), 123_456);
        assert_eq!(combine_ppm(123_456, 0), 123_456);
        assert_eq!(combine_ppm(1_000_000, 5), 1_000_000);
        // 1 - 0.9 * 0.8 = 0.28; 1 - 0.5 * 0.5 = 0.75.
        assert_eq!(combine_ppm(100_000, 200_000), 280_000);
        assert_eq!(combine_ppm(500_000, 500_000), 750_000);
        // 1 - (1 - 1e-6)^2 = 1.999999e-6: the complement's product rounds down, so this rounds
        // up to 2 ppm rather than down to 1.
        assert_eq!(combine_ppm(1, 1), 2);
    }

    #[test]
    fn degrades_stack_on_their_links_and_each_end_removes_its_own() {
        let base = LinkConfig {
            loss_ppm: 100_000,
            duplicate_ppm: 0,
            ..LinkConfig::default()
        };
        let mut links = Links::new(3, &base);
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        links.add_degrade(7, vec![(a, b), (a, c)], 200_000, 50_000);
        links.add_degrade(8, vec![(a, b)], 500_000, 0);
        assert_eq!(links.loss_and_duplicate(a, b), (640_000, 50_000));
        assert_eq!(links.loss_and_duplicate(a, c), (280_000, 50_000));
        assert_eq!(links.loss_and_duplicate(b, a), (100_000, 0));
        assert!(links.remove_degrade(7));
        assert_eq!(links.loss_and_duplicate(a, b), (550_000, 0));
        assert_eq!(links.loss_and_duplicate(a, c), (100_000, 0));
        assert!(!links.remove_degrade(7), "already ended");
        assert!(links.remove_degrade(8));
        assert_eq!(links.loss_and_duplicate(a, b), (100_000, 0));
    }

    #[test]
    fn majority_minority_cuts_two_of_five_both_ways() {
        let links = Shape::MajorityMinority {
            nodes: ids(&[0, 1, 2, 3, 4]),
        }
        .links(5, &mut Rng::fork(1, "f"));
        // 2 x 3 pairs, both directions.
        assert_eq!(links.len(), 12);
    }

    #[test]
    fn bridge_node_reaches_both_sides() {
        let links = Shape::Bridge {
            nodes: ids(&[0, 1, 2, 3, 4]),
        }
        .links(5, &mut Rng::fork(2, "f"));
        assert_eq!(links.len(), 8);
        let touched: Vec<NodeId> = links.iter().flat_map(|&(a, b)| [a, b]).collect();
        let bridge = ids(&[0, 1, 2, 3, 4])
            .into_iter()
            .find(|n| !touched.contains(n));
        assert!(bridge.is_some(), "one node keeps every link");
    }

    #[test]
    fn majorities_ring_leaves_everyone_a_distinct_majority() {
        let nodes = ids(&[0, 1, 2, 3, 4]);
        let links = Shape::MajoritiesRing {
            nodes: nodes.clone(),
        }
        .links(5, &mut Rng::fork(3, "f"));
        let mut views = Vec::new();
        for &a in &nodes {
            let view: Vec<NodeId> = nodes
                .iter()
                .copied()
                .filter(|&b| a == b || !links.contains(&(a, b)))
                .collect();
            assert_eq!(view.len(), 3, "{a:?} sees a majority");
            views.push(view);
        }
        views.sort();
        views.dedup();
        assert_eq!(views.len(), 5);
    }

    #[test]
    fn isolate_cuts_a_node_from_everyone_both_ways() {
        let links = Shape::Isolate { node: NodeId(1) }.links(3, &mut Rng::fork(0, "f"));
        let expected = [(0, 1), (1, 0), (1, 2), (2, 1)].map(|(a, b)| (NodeId(a), NodeId(b)));
        assert_eq!(links, expected.to_vec());
    }

    #[test]
    fn one_way_blocks_one_direction() {
        let links = Shape::OneWay {
            from: ids(&[0]),
            to: ids(&[1, 2]),
        }
        .links(5, &mut Rng::fork(0, "f"));
        assert_eq!(links, vec![(NodeId(0), NodeId(1)), (NodeId(0), NodeId(2))]);
    }
}
