//! Redis Sentinel (Redis's `src/sentinel.c`): monitoring, subjective and
//! objective down, a leader election per epoch, promotion of the best replica, and the
//! reconfiguration of every other server, including an old primary when it comes back.
//!
//! Each sentinel runs its timer 10-19 times a second (a new random `hz` after every run) and
//! reads its WALL clock for every decision, as Sentinel's `mstime()` does. It pings every
//! server once a second; the reply carries the role, the primary replicated and the
//! replication offset (what Sentinel reads from `INFO`, which it polls every 10 s, or every
//! second during a failover; folding it into the ping is a simplification). A primary that has not answered a ping for more than `down_after` is
//! subjectively down (SDOWN); when `quorum` sentinels, counting itself, say so within the
//! last 5 s it is objectively down (ODOWN). The sentinel then starts a failover in a new
//! epoch and asks the others for their vote; each votes once per epoch, for the first
//! candidate that asks. A candidate with votes from a majority of all sentinels (and at least
//! `quorum`) is the leader; one that is not elected within the election timeout gives up and
//! may try again only after twice the failover timeout. The leader picks the replica with
//! the largest offset (then the lowest id; replica priorities are all equal), sends it
//! `REPLICAOF NO ONE`, waits until it reports itself primary, sends every other server
//! `REPLICAOF` the new primary, and announces the new configuration (a hello with the config
//! epoch) to the other sentinels, which adopt any configuration with a higher epoch. Whenever
//! its primary changes, a sentinel starts its records of the servers afresh
//! (`sentinelResetMasterAndChangeAddress`); a server still unreachable then is marked down
//! again at its next tick (real Sentinel: `down_after` after it opens a new link).
//!
//! Servers whose role disagrees with the configuration are reconfigured while the primary
//! looks sane (it reports itself primary, is not down, and answered within 20 s), by the two
//! rules of `sentinelRefreshInstanceInfo`: a server that reports itself primary, such as a
//! partitioned old primary, is sent `REPLICAOF` the primary once it has reported so for 8 s
//! (`+convert-to-slave`); a replica of another primary is sent it once its reported primary
//! has not changed for `failover_timeout` (`+fix-slave-config`). Neither happens to a server
//! that went down (SDOWN) within that wait: Sentinel keeps the time a server last went down
//! (`s_down_since_time`, not cleared when it comes back) and requires it to be older.
//!
//! TILT: a tick that sees the wall clock go back or jump more than 2 s puts the sentinel in
//! TILT for 30 s: it keeps pinging but takes no action and says no primary is down.
//! Not modelled: replica priorities, `parallel-syncs` (all replicas are reconfigured at
//! once), the exclusion of replicas disconnected from their primary for too long, the hello
//! channel through the servers (sentinels talk directly), and sentinel discovery (each
//! sentinel knows the others from its configuration).

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::Role;
use super::{Msg, Timer};
use crate::env::Host;

/// `down-after-milliseconds` by default.
pub const DEFAULT_DOWN_AFTER: Dur = Dur::from_secs(30);
/// `failover-timeout` by default.
pub const DEFAULT_FAILOVER_TIMEOUT: Dur = Dur::from_secs(180);
/// Sentinels ping every server this often (`SENTINEL_PING_PERIOD`).
pub const PING_PERIOD: Dur = Dur::from_secs(1);
/// A sentinel asks the others about a down primary this often (`SENTINEL_ASK_PERIOD`).
pub const ASK_PERIOD: Dur = Dur::from_secs(1);
/// Sentinels announce their configuration this often (`SENTINEL_PUBLISH_PERIOD`).
pub const HELLO_PERIOD: Dur = Dur::from_secs(2);
/// The longest a candidate waits to be elected (`SENTINEL_ELECTION_TIMEOUT`).
pub const ELECTION_TIMEOUT: Dur = Dur::from_secs(10);
/// A tick this far from the previous one, or back in time, means TILT (`SENTINEL_TILT_TRIGGER`).
pub const TILT_TRIGGER: Dur = Dur::from_secs(2);
/// How long TILT lasts (`SENTINEL_TILT_PERIOD`).
pub const TILT_PERIOD: Dur = Dur::from_secs(30);
/// The sentinel timer's frequency: `hz` 10 plus a random 0-9 drawn after every run of the
/// timer, "to make sure not all sentinels are perfectly synchronized" (`sentinelTimer`).
pub const HZ: u64 = 10;
/// The random delay added to a failover start (`SENTINEL_MAX_DESYNC`), in ms.
const MAX_DESYNC_MS: u64 = 1000;
/// Another sentinel's "down" answer counts this long (`SENTINEL_ASK_PERIOD * 5`).
const DOWN_REPLY_VALIDITY: Dur = Dur::from_secs(5);
/// A replica must have answered within this to be promoted (`SENTINEL_PING_PERIOD * 5`).
const REPLICA_VALIDITY: Dur = Dur::from_secs(5);
/// A server the configuration makes a replica that reports itself primary is reconfigured
/// after this (`SENTINEL_PUBLISH_PERIOD * 4`).
const CONVERT_TO_REPLICA_WAIT: Dur = Dur::from_secs(8);
/// Sentinel's `INFO` period; a primary whose last report is older than twice this does not
/// look sane (`SENTINEL_INFO_PERIOD`).
const INFO_PERIOD: Dur = Dur::from_secs(10);

/// How the sentinels are set up; every sentinel monitors one primary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentinelConfig {
    /// Every Redis server; the first is the primary at start.
    pub servers: Vec<NodeId>,
    /// Every sentinel, this one included.
    pub sentinels: Vec<NodeId>,
    /// Sentinels that must agree the primary is down.
    pub quorum: u32,
    /// `down-after-milliseconds`.
    pub down_after: Dur,
    /// `failover-timeout`.
    pub failover_timeout: Dur,
}

/// Messages to, from and between sentinels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SentinelMsg {
    /// Sentinel to server: `PING` (and `INFO`).
    Ping,
    /// Server to sentinel: its role and replication offset.
    Pong {
        /// The role.
        role: Role,
        /// The offset.
        offset: u64,
    },
    /// Sentinel to server: `REPLICAOF primary`, or `REPLICAOF NO ONE` with `None`.
    ReplicaOf {
        /// The new primary.
        primary: Option<NodeId>,
    },
    /// Sentinel to sentinel: `SENTINEL is-master-down-by-addr`, asking for a vote for
    /// `candidate` in `epoch` when it is given.
    IsMasterDown {
        /// The primary asked about.
        primary: NodeId,
        /// The asker's current epoch.
        epoch: u64,
        /// The candidate to vote for, if a vote is asked.
        candidate: Option<NodeId>,
    },
    /// The answer: whether the primary is subjectively down here, and this sentinel's vote.
    MasterDownReply {
        /// Down here.
        down: bool,
        /// Whom this sentinel voted for, if a vote was asked.
        leader: Option<NodeId>,
        /// The epoch of that vote.
        leader_epoch: u64,
    },
    /// Sentinel to sentinel: the configuration it knows.
    Hello {
        /// The primary.
        primary: NodeId,
        /// The epoch of that configuration.
        config_epoch: u64,
        /// The sender's current epoch.
        current_epoch: u64,
    },
    /// Client to sentinel: `SENTINEL get-master-addr-by-name`.
    GetPrimary {
        /// The client's request id.
        id: u64,
    },
    /// The answer.
    PrimaryIs {
        /// The request id.
        id: u64,
        /// The primary this sentinel knows.
        primary: NodeId,
    },
}

/// Timers of a sentinel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SentinelTimer {
    /// `sentinelTimer`, 10-19 times a second.
    Tick,
}

/// What a sentinel knows of one server.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Instance {
    /// When the oldest unanswered ping was sent (`link->act_ping_time`).
    unanswered_since: Option<LocalTime>,
    /// The link was closed by a reset and not opened again (`link->disconnected`): no
    /// periodic ping goes out on it.
    disconnected: bool,
    /// When the link was last opened again (`link->last_reconn_time`).
    last_reconnect: Option<LocalTime>,
    last_ping: Option<LocalTime>,
    last_reply: LocalTime,
    role: Option<Role>,
    offset: u64,
    /// The role last reported: primary or not (`role_reported`), and since when
    /// (`role_reported_time`).
    reports_master: bool,
    role_reported_time: LocalTime,
    /// The primary it last reported replicating (`slave_master_host`), and when that last
    /// changed, or it last turned replica (`slave_conf_change_time`).
    reported_primary: Option<NodeId>,
    conf_change_time: LocalTime,
    /// Subjectively down now (`SRI_S_DOWN`), and when it last became so
    /// (`s_down_since_time`).
    sdown: bool,
    sdown_since: Option<LocalTime>,
}

impl Instance {
    /// A fresh record of `server`, which the configuration makes the primary or not.
    fn new(now: LocalTime, primary: bool) -> Instance {
        Instance {
            unanswered_since: None,
            disconnected: false,
            last_reconnect: None,
            last_ping: None,
            last_reply: now,
            role: None,
            offset: 0,
            reports_master: primary,
            role_reported_time: now,
            reported_primary: None,
            conf_change_time: now,
            sdown: false,
            sdown_since: None,
        }
    }

    /// Starts the role and down records again, as a record created now would
    /// (`sentinelResetMasterAndChangeAddress` recreates the replicas' records); the ping
    /// state stays.
    fn reset(&mut self, now: LocalTime, primary: bool) {
        let fresh = Instance::new(now, primary);
        *self = Instance {
            unanswered_since: self.unanswered_since,
            disconnected: self.disconnected,
            last_reconnect: self.last_reconnect,
            last_ping: self.last_ping,
            last_reply: self.last_reply,
            role: self.role,
            offset: self.offset,
            ..fresh
        };
    }

    /// `sentinelRedisInstanceNoDownFor`: it did not go down within `wait`.
    fn no_down_for(&self, wait: Dur, now: LocalTime) -> bool {
        self.sdown_since
            .is_none_or(|t| now.saturating_since(t) > wait)
    }
}

/// What a sentinel heard from another.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Peer {
    down: bool,
    reply_at: Option<LocalTime>,
    last_ask: Option<LocalTime>,
    leader: Option<NodeId>,
    leader_epoch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failover {
    None,
    /// Waiting to be elected leader of `epoch`.
    WaitStart {
        epoch: u64,
        since: LocalTime,
    },
    /// `REPLICAOF NO ONE` sent to `promoted`.
    WaitPromotion {
        epoch: u64,
        since: LocalTime,
        promoted: NodeId,
    },
}

/// A sentinel process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sentinel {
    config: SentinelConfig,
    // Durable: sentinel.conf is rewritten on every change of these.
    primary: NodeId,
    config_epoch: u64,
    current_epoch: u64,
    leader: Option<NodeId>,
    leader_epoch: u64,
    // Volatile.
    instances: BTreeMap<NodeId, Instance>,
    peers: BTreeMap<NodeId, Peer>,
    last_tick: Option<LocalTime>,
    tilt_since: Option<LocalTime>,
    failover: Failover,
    /// No new failover before twice the failover timeout after this (`failover_start_time`).
    failover_start: Option<LocalTime>,
    last_hello: Option<LocalTime>,
}

impl Sentinel {
    /// A sentinel that believes the first server is the primary.
    pub fn new(config: SentinelConfig) -> Sentinel {
        let primary = *config
            .servers
            .first()
            .expect("a sentinel monitors a server");
        Sentinel {
            config,
            primary,
            config_epoch: 0,
            current_epoch: 0,
            leader: None,
            leader_epoch: 0,
            instances: BTreeMap::new(),
            peers: BTreeMap::new(),
            last_tick: None,
            tilt_since: None,
            failover: Failover::None,
            failover_start: None,
            last_hello: None,
        }
    }

    /// The primary this sentinel's configuration names.
    pub fn primary(&self) -> NodeId {
        self.primary
    }

    /// The epoch of its configuration.
    pub fn config_epoch(&self) -> u64 {
        self.config_epoch
    }

    /// True while in TILT.
    pub fn in_tilt(&self) -> bool {
        self.tilt_since.is_some()
    }

    /// True while it runs a failover (from `+try-failover` until it ends or is given up).
    pub fn failing_over(&self) -> bool {
        self.failover != Failover::None
    }

    pub(crate) fn on_start(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        let now = ctx.wall();
        for &s in &self.config.servers {
            let instance = Instance::new(now, s == self.primary);
            self.instances.insert(s, instance);
        }
        let me = ctx.id();
        for &p in self.config.sentinels.iter().filter(|&&p| p != me) {
            let peer = Peer {
                down: false,
                reply_at: None,
                last_ask: None,
                leader: None,
                leader_epoch: 0,
            };
            self.peers.insert(p, peer);
        }
        arm(ctx);
    }

    /// A crash keeps sentinel.conf: the configuration, the epochs and the vote.
    pub(crate) fn on_crash(&mut self) {
        self.instances.clear();
        self.peers.clear();
        self.last_tick = None;
        self.tilt_since = None;
        self.failover = Failover::None;
        self.failover_start = None;
        self.last_hello = None;
    }

    pub(crate) fn on_timer(&mut self, ctx: &mut impl Host<Msg, Timer>, timer: SentinelTimer) {
        let SentinelTimer::Tick = timer;
        let now = ctx.wall();
        self.check_tilt(now);
        self.send_periodic(ctx, now);
        if !self.in_tilt() {
            self.check_sdown(now);
            let sdown = self.primary_sdown(now);
            if sdown {
                self.ask_others(ctx, now, false);
            }
            if self.start_failover_if_needed(ctx, now) {
                self.ask_others(ctx, now, true);
            }
            self.failover_step(ctx, now);
        }
        arm(ctx);
    }

    fn check_tilt(&mut self, now: LocalTime) {
        if let Some(last) = self.last_tick {
            let delta = now.nanos_since(last);
            if delta < 0 || delta > TILT_TRIGGER.as_nanos() as i64 {
                self.tilt_since = Some(now);
            }
        }
        self.last_tick = Some(now);
        if let Some(since) = self.tilt_since {
            if now.saturating_since(since) > TILT_PERIOD {
                self.tilt_since = None;
            }
        }
    }

    /// The link to `peer` was reset: its process died, or it refused a ping. Sentinel's
    /// disconnect callback closes the link (`instanceLinkCloseConnection`); a pending ping
    /// stays pending (`act_ping_time` is kept).
    pub(crate) fn on_reset(&mut self, peer: NodeId) {
        if let Some(inst) = self.instances.get_mut(&peer) {
            inst.disconnected = true;
        }
    }

    /// Opens closed links again, at most once a ping period each, and pings at once on the
    /// new link (`sentinelReconnectInstance`: "Send a PING ASAP when reconnecting"); pings
    /// every connected server once a second (`sentinelSendPeriodicCommands`, which skips a
    /// disconnected link); says hello to the others every two seconds.
    fn send_periodic(&mut self, ctx: &mut impl Host<Msg, Timer>, now: LocalTime) {
        for (&s, inst) in self.instances.iter_mut() {
            if inst.disconnected {
                if inst
                    .last_reconnect
                    .is_some_and(|t| now.saturating_since(t) < PING_PERIOD)
                {
                    continue;
                }
                inst.last_reconnect = Some(now);
                inst.disconnected = false;
                inst.last_ping = Some(now);
                inst.unanswered_since.get_or_insert(now);
                ctx.send(s, Msg::Sentinel(SentinelMsg::Ping));
            } else if inst
                .last_ping
                .is_none_or(|t| now.saturating_since(t) >= PING_PERIOD)
            {
                inst.last_ping = Some(now);
                inst.unanswered_since.get_or_insert(now);
                ctx.send(s, Msg::Sentinel(SentinelMsg::Ping));
            }
        }
        if self
            .last_hello
            .is_none_or(|t| now.saturating_since(t) >= HELLO_PERIOD)
        {
            self.last_hello = Some(now);
            self.hello(ctx);
        }
    }

    fn hello(&self, ctx: &mut impl Host<Msg, Timer>) {
        let msg = SentinelMsg::Hello {
            primary: self.primary,
            config_epoch: self.config_epoch,
            current_epoch: self.current_epoch,
        };
        for &p in self.peers.keys() {
            ctx.send(p, Msg::Sentinel(msg.clone()));
        }
    }

    /// `sentinelCheckSubjectivelyDown`: down when the oldest unanswered ping is older than
    /// `down_after`, or, with none pending and the link closed, when the last reply is.
    fn sdown(&self, node: NodeId, now: LocalTime) -> bool {
        self.instances.get(&node).is_some_and(|i| {
            let since = match i.unanswered_since {
                Some(t) => Some(t),
                None => i.disconnected.then_some(i.last_reply),
            };
            since.is_some_and(|t| now.saturating_since(t) > self.config.down_after)
        })
    }

    /// `sentinelCheckSubjectivelyDown` for every server: note when each goes down.
    fn check_sdown(&mut self, now: LocalTime) {
        let down: Vec<(NodeId, bool)> = self
            .instances
            .keys()
            .map(|&n| (n, self.sdown(n, now)))
            .collect();
        for (n, down) in down {
            let inst = self.instances.get_mut(&n).expect("a known server");
            if down && !inst.sdown {
                inst.sdown_since = Some(now);
            }
            inst.sdown = down;
        }
    }

    fn primary_sdown(&self, now: LocalTime) -> bool {
        self.sdown(self.primary, now)
    }

    fn primary_odown(&self, now: LocalTime) -> bool {
        if !self.primary_sdown(now) {
            return false;
        }
        let others = self
            .peers
            .values()
            .filter(|p| {
                p.down
                    && p.reply_at
                        .is_some_and(|t| now.saturating_since(t) <= DOWN_REPLY_VALIDITY)
            })
            .count();
        1 + others as u32 >= self.config.quorum
    }

    /// Asks the others whether the primary is down (once per ask period, or at once when
    /// `forced`), and for their vote while a failover is under way.
    fn ask_others(&mut self, ctx: &mut impl Host<Msg, Timer>, now: LocalTime, forced: bool) {
        let candidate = match self.failover {
            Failover::None => None,
            _ => Some(ctx.id()),
        };
        let msg = SentinelMsg::IsMasterDown {
            primary: self.primary,
            epoch: self.current_epoch,
            candidate,
        };
        for (&p, peer) in self.peers.iter_mut() {
            if forced
                || peer
                    .last_ask
                    .is_none_or(|t| now.saturating_since(t) >= ASK_PERIOD)
            {
                peer.last_ask = Some(now);
                ctx.send(p, Msg::Sentinel(msg.clone()));
            }
        }
    }

    fn start_failover_if_needed(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        now: LocalTime,
    ) -> bool {
        if self.failover != Failover::None || !self.primary_odown(now) {
            return false;
        }
        let gate = self.config.failover_timeout * 2;
        if self
            .failover_start
            .is_some_and(|t| now.saturating_since(t) < gate)
        {
            return false;
        }
        self.current_epoch += 1;
        let desync = Dur::from_millis(ctx.rng().below(MAX_DESYNC_MS));
        self.failover_start = Some(now + desync);
        self.failover = Failover::WaitStart {
            epoch: self.current_epoch,
            since: now,
        };
        true
    }

    fn failover_step(&mut self, ctx: &mut impl Host<Msg, Timer>, now: LocalTime) {
        match self.failover {
            Failover::None => {}
            Failover::WaitStart { epoch, since } => {
                let me = ctx.id();
                if self.leader_of(ctx, epoch, now) == Some(me) {
                    self.promote_best_replica(ctx, epoch, now);
                } else if now.saturating_since(since)
                    > ELECTION_TIMEOUT.min(self.config.failover_timeout)
                {
                    self.failover = Failover::None;
                }
            }
            Failover::WaitPromotion {
                epoch,
                since,
                promoted,
            } => {
                let role = self.instances.get(&promoted).and_then(|i| i.role);
                if role == Some(Role::Master) {
                    self.switch_to(ctx, promoted, epoch);
                } else if now.saturating_since(since) > self.config.failover_timeout {
                    self.failover = Failover::None;
                }
            }
        }
    }

    /// `sentinelGetLeader`: the candidate with the most votes in `epoch`, if it has a
    /// majority of all sentinels and at least the quorum. This sentinel votes too: for the
    /// current winner, or for itself.
    fn leader_of(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        epoch: u64,
        now: LocalTime,
    ) -> Option<NodeId> {
        let mut votes: BTreeMap<NodeId, u32> = BTreeMap::new();
        for p in self.peers.values() {
            if let (Some(l), true) = (p.leader, p.leader_epoch == epoch) {
                *votes.entry(l).or_default() += 1;
            }
        }
        let winner = best(&votes).map(|(n, _)| n);
        let me = ctx.id();
        self.vote(ctx, epoch, winner.unwrap_or(me), now);
        if self.leader_epoch == epoch {
            if let Some(l) = self.leader {
                *votes.entry(l).or_default() += 1;
            }
        }
        let (winner, count) = best(&votes)?;
        let majority = self.config.sentinels.len() as u32 / 2 + 1;
        (count >= majority.max(self.config.quorum)).then_some(winner)
    }

    /// `sentinelVoteLeader`: one vote per epoch, for the first candidate that asks.
    fn vote(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        epoch: u64,
        candidate: NodeId,
        now: LocalTime,
    ) {
        if epoch > self.current_epoch {
            self.current_epoch = epoch;
        }
        if self.leader_epoch < epoch && self.current_epoch <= epoch {
            self.leader = Some(candidate);
            self.leader_epoch = epoch;
            if candidate != ctx.id() {
                // Voting for another delays this sentinel's own failover.
                let desync = Dur::from_millis(ctx.rng().below(MAX_DESYNC_MS));
                self.failover_start = Some(now + desync);
            }
        }
    }

    /// Picks the replica with the largest offset, then the lowest id, among those that
    /// answer, and sends it `REPLICAOF NO ONE`.
    fn promote_best_replica(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        epoch: u64,
        now: LocalTime,
    ) {
        let primary = self.primary;
        let best = self
            .instances
            .iter()
            .filter(|&(&n, i)| {
                n != primary
                    && matches!(i.role, Some(Role::Replica { .. }))
                    && !self.sdown(n, now)
                    && now.saturating_since(i.last_reply) <= REPLICA_VALIDITY
            })
            .max_by_key(|&(&n, i)| (i.offset, std::cmp::Reverse(n)))
            .map(|(&n, _)| n);
        let Some(promoted) = best else {
            self.failover = Failover::None; // "No suitable replica": abort.
            return;
        };
        let msg = SentinelMsg::ReplicaOf { primary: None };
        ctx.send(promoted, Msg::Sentinel(msg));
        self.failover = Failover::WaitPromotion {
            epoch,
            since: now,
            promoted,
        };
    }

    /// The promoted replica reports itself primary: reconfigure every other server and
    /// announce the new configuration.
    fn switch_to(&mut self, ctx: &mut impl Host<Msg, Timer>, promoted: NodeId, epoch: u64) {
        let old = self.primary;
        for &s in &self.config.servers {
            if s != promoted && s != old {
                let msg = SentinelMsg::ReplicaOf {
                    primary: Some(promoted),
                };
                ctx.send(s, Msg::Sentinel(msg));
            }
        }
        self.primary = promoted;
        self.config_epoch = epoch;
        self.failover = Failover::None;
        self.reset_instances(ctx.wall());
        self.hello(ctx);
    }

    /// A new primary: the records of every server start again.
    fn reset_instances(&mut self, now: LocalTime) {
        let primary = self.primary;
        for (&n, inst) in self.instances.iter_mut() {
            inst.reset(now, n == primary);
        }
    }

    /// `sentinelMasterLooksSane`: the primary reports itself primary, is not down, and its
    /// last report is recent.
    fn primary_looks_sane(&self, now: LocalTime) -> bool {
        self.instances.get(&self.primary).is_some_and(|p| {
            p.role == Some(Role::Master) && now.saturating_since(p.last_reply) < INFO_PERIOD * 2
        }) && !self.primary_sdown(now)
    }

    /// On a server's report (`sentinelRefreshInstanceInfo`): note changes of its role and of
    /// the primary it replicates, then reconfigure it if its role disagrees with the
    /// configuration for long enough (see the module's documentation). Nothing in TILT or
    /// during a failover (whose promoted replica reports itself primary on purpose).
    fn refresh_info(&mut self, ctx: &mut impl Host<Msg, Timer>, server: NodeId, now: LocalTime) {
        let Some(inst) = self.instances.get_mut(&server) else {
            return;
        };
        let Some(role) = inst.role else {
            return;
        };
        let master = role == Role::Master;
        if master != inst.reports_master {
            inst.reports_master = master;
            inst.role_reported_time = now;
            if !master {
                inst.conf_change_time = now;
            }
        }
        if let Role::Replica { of } = role {
            if inst.reported_primary != Some(of) {
                inst.reported_primary = Some(of);
                inst.conf_change_time = now;
            }
        }
        let primary = self.primary;
        if server == primary
            || self.in_tilt()
            || self.failover != Failover::None
            || !self.primary_looks_sane(now)
        {
            return;
        }
        let inst = &self.instances[&server];
        let (wait, since) = match role {
            // `+convert-to-slave`.
            Role::Master => (CONVERT_TO_REPLICA_WAIT, inst.role_reported_time),
            // `+fix-slave-config`.
            Role::Replica { of } if of != primary => {
                (self.config.failover_timeout, inst.conf_change_time)
            }
            Role::Replica { .. } => return,
        };
        if inst.no_down_for(wait, now) && now.saturating_since(since) > wait {
            let msg = SentinelMsg::ReplicaOf {
                primary: Some(primary),
            };
            ctx.send(server, Msg::Sentinel(msg));
        }
    }

    pub(crate) fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        from: NodeId,
        msg: SentinelMsg,
    ) {
        let now = ctx.wall();
        match msg {
            SentinelMsg::Pong { role, offset } => {
                if let Some(inst) = self.instances.get_mut(&from) {
                    inst.unanswered_since = None;
                    inst.last_reply = now;
                    inst.role = Some(role);
                    inst.offset = offset;
                    self.refresh_info(ctx, from, now);
                }
            }
            SentinelMsg::IsMasterDown {
                primary,
                epoch,
                candidate,
            } => {
                let ours = primary == self.primary;
                let down = ours && !self.in_tilt() && self.primary_sdown(now);
                let mut leader = None;
                if let (Some(c), true) = (candidate, ours) {
                    self.vote(ctx, epoch, c, now);
                    leader = self.leader;
                }
                let reply = SentinelMsg::MasterDownReply {
                    down,
                    leader,
                    leader_epoch: self.leader_epoch,
                };
                ctx.send(from, Msg::Sentinel(reply));
            }
            SentinelMsg::MasterDownReply {
                down,
                leader,
                leader_epoch,
            } => {
                if let Some(p) = self.peers.get_mut(&from) {
                    p.down = down;
                    p.reply_at = Some(now);
                    if leader.is_some() {
                        p.leader = leader;
                        p.leader_epoch = leader_epoch;
                    }
                }
            }
            SentinelMsg::Hello {
                primary,
                config_epoch,
                current_epoch,
            } => {
                self.current_epoch = self.current_epoch.max(current_epoch);
                if config_epoch > self.config_epoch {
                    let changed = primary != self.primary;
                    self.primary = primary;
                    self.config_epoch = config_epoch;
                    self.failover = Failover::None;
                    if changed {
                        self.reset_instances(now);
                    }
                }
            }
            SentinelMsg::GetPrimary { id } => {
                let reply = SentinelMsg::PrimaryIs {
                    id,
                    primary: self.primary,
                };
                ctx.send(from, Msg::Sentinel(reply));
            }
            other => panic!("{} cannot handle {other:?}", ctx.name()),
        }
    }
}

fn arm(ctx: &mut impl Host<Msg, Timer>) {
    let hz = HZ + ctx.rng().below(HZ);
    ctx.set_timer(
        ClockKind::Mono,
        Dur::from_secs(1) / hz,
        Timer::Sentinel(SentinelTimer::Tick),
    );
}

/// The entry with the most votes; the lowest id among equals.
fn best(votes: &BTreeMap<NodeId, u32>) -> Option<(NodeId, u32)> {
    votes
        .iter()
        .max_by_key(|&(&n, &c)| (c, std::cmp::Reverse(n)))
        .map(|(&n, &c)| (n, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timer_defaults_are_sentinels() {
        assert_eq!(DEFAULT_DOWN_AFTER, Dur::from_millis(30_000));
        assert_eq!(PING_PERIOD, Dur::from_secs(1));
        assert_eq!(DEFAULT_FAILOVER_TIMEOUT, Dur::from_millis(180_000));
        assert_eq!(ELECTION_TIMEOUT, Dur::from_secs(10));
        assert_eq!(ASK_PERIOD, Dur::from_secs(1));
        assert_eq!(HELLO_PERIOD, Dur::from_secs(2));
        assert_eq!(
            (TILT_TRIGGER, TILT_PERIOD),
            (Dur::from_secs(2), Dur::from_secs(30))
        );
        assert_eq!(HZ, 10);
    }

    #[test]
    fn the_leader_is_the_candidate_with_most_votes_and_lowest_id_among_equals() {
        let votes = BTreeMap::from([(NodeId(5), 2), (NodeId(4), 2), (NodeId(3), 1)]);
        assert_eq!(best(&votes), Some((NodeId(4), 2)));
        assert_eq!(best(&BTreeMap::new()), None);
    }
}
