//! Asynchronous replication and `WAIT` (Redis's replication docs and `commands/wait.md`).
//!
//! A primary replies `+OK` first and streams the write afterwards, rewritten with absolute
//! deadlines ([`ReplOp`]). Each write gets the next replication offset. A replica connects
//! with `PSYNC`, always gets a full resync (the primary's dataset at its current offset, as
//! the RDB transfer does; PSYNC2's partial resync after a failover gives the same dataset, so
//! it is not modelled), then the stream. Each write waits for the replication lag in the
//! primary before it is sent; the lag is drawn per write, but a write never overtakes an
//! earlier one, and the replica applies the stream in offset order whatever the network
//! does (a TCP stream). The replica acknowledges its offset after each step and once a second
//! (`REPLCONF ACK` from `replicationCron`).
//!
//! Broken links. A real replica notices a broken connection and reconnects; here a primary
//! that sees a replica's acknowledgement stand still for a second while it has sent more
//! resends its dataset (a resync on the same link, what a reconnection would bring), an
//! acknowledgement on a link the primary does not know (it restarted or was demoted) is
//! answered with a reset, after which the replica reconnects on its next cron, and a replica
//! that waited `repl-timeout` (60 s) for its resync sends `PSYNC` again. The primary's pings
//! (`repl-ping-replica-period`) are not modelled. `min-replicas-to-write` is not modelled.
//!
//! `WAIT n timeout` blocks the caller until `n` replicas acknowledged its last write, or the
//! timeout passed, and replies with the count either way; the write stays whatever the count
//! (`commands/wait.md`).

use std::collections::{BTreeMap, VecDeque};

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TimerId};

use super::persistence::Db;
use super::server::{RedisServer, ServerTimer, set};
use super::{Msg, Timer};
use super::{ReplOp, Reply, Role};
use crate::env::Host;

/// `replicationCron` runs once a second.
pub const REPLICATION_CRON_PERIOD: Dur = Dur::from_secs(1);

/// A replica waiting this many crons for its resync reconnects (`repl-timeout`, 60 s).
const REPL_TIMEOUT_CRONS: u32 = 60;

/// Messages of the replication link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplMsg {
    /// A replica asks its primary for the stream, on a new link `sync`.
    Psync {
        /// The link's id, chosen by the replica.
        sync: u64,
    },
    /// A full resync: the primary's dataset at `offset`, deadlines and all.
    FullSync {
        /// The link.
        sync: u64,
        /// The primary's offset the dataset stands at.
        offset: u64,
        /// The dataset.
        data: Db,
    },
    /// One write of the stream.
    Stream {
        /// The link.
        sync: u64,
        /// The write's offset.
        offset: u64,
        /// The write.
        op: ReplOp,
    },
    /// A replica's acknowledgement of its offset (`REPLCONF ACK`).
    Ack {
        /// The link.
        sync: u64,
        /// The replica's offset.
        offset: u64,
    },
    /// The primary does not know link `sync` (the connection was reset).
    Reset {
        /// The link.
        sync: u64,
    },
}

/// A primary's link to one replica.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Link {
    sync: u64,
    /// The replica's acknowledged offset.
    acked: u64,
    /// The highest offset sent so far.
    sent: u64,
    /// `sent` when the previous acknowledgement arrived.
    sent_at_last_ack: u64,
    /// Messages waiting for their lag, in stream order, with the monotonic time they go out.
    queue: VecDeque<(LocalTime, ReplMsg)>,
    /// When the last queued message goes out: a later one never goes before it.
    last_out: LocalTime,
}

/// A replica's link to its primary.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Upstream {
    primary: NodeId,
    sync: u64,
    /// The full resync arrived.
    synced: bool,
    /// Stream writes that arrived ahead of their turn.
    pending: BTreeMap<u64, ReplOp>,
    /// Crons passed while waiting for the full resync.
    idle_crons: u32,
}

/// A client blocked in `WAIT`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockedWait {
    client: NodeId,
    id: u64,
    /// The client's last write offset.
    target: u64,
    replicas: u32,
    timer: Option<TimerId>,
}

/// A server's replication state; all of it is volatile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Repl {
    pub(crate) role: Role,
    /// `master_repl_offset` on a primary, the applied offset on a replica.
    pub(crate) offset: u64,
    links: BTreeMap<NodeId, Link>,
    upstream: Option<Upstream>,
    waits: Vec<BlockedWait>,
    /// Each client's last write offset (`c->woff`).
    pub(crate) woff: BTreeMap<NodeId, u64>,
    next_sync: u64,
    cron_armed: bool,
}

impl Repl {
    /// The state of a server that starts (or restarts) with this configured role.
    pub(crate) fn new(replica_of: Option<NodeId>) -> Repl {
        Repl {
            role: replica_of.map_or(Role::Master, |of| Role::Replica { of }),
            offset: 0,
            links: BTreeMap::new(),
            upstream: None,
            waits: Vec::new(),
            woff: BTreeMap::new(),
            next_sync: 0,
            cron_armed: false,
        }
    }
}

impl RedisServer {
    /// Connects (again) to `primary` with a new link.
    pub(super) fn connect_to_primary(&mut self, ctx: &mut impl Host<Msg, Timer>, primary: NodeId) {
        self.repl.next_sync += 1;
        let sync = self.repl.next_sync;
        self.repl.upstream = Some(Upstream {
            primary,
            sync,
            synced: false,
            pending: BTreeMap::new(),
            idle_crons: 0,
        });
        ctx.send(primary, Msg::Repl(ReplMsg::Psync { sync }));
        if !self.repl.cron_armed {
            self.repl.cron_armed = true;
            set(ctx, REPLICATION_CRON_PERIOD, ServerTimer::ReplCron);
        }
    }

    /// `REPLICAOF primary` (rewritten into the configuration file): a primary drops its
    /// replicas and answers its blocked `WAIT`s; the dataset stays until the full resync
    /// replaces it (a demoted primary's writes are lost: Jepsen's "Redis", 2013).
    pub(super) fn become_replica(&mut self, ctx: &mut impl Host<Msg, Timer>, primary: NodeId) {
        if self.repl.role == (Role::Replica { of: primary }) {
            return; // "OK Already connected to specified master".
        }
        for w in std::mem::take(&mut self.repl.waits) {
            if let Some(t) = w.timer {
                ctx.cancel_timer(t);
            }
            let count = self.acked_count(w.target);
            ctx.send(w.client, reply(w.id, Reply::Int(i64::from(count))));
        }
        self.repl.links.clear();
        self.repl.role = Role::Replica { of: primary };
        self.replica_of = Some(primary);
        self.connect_to_primary(ctx, primary);
    }

    /// `REPLICAOF NO ONE`: the replica becomes a primary with its dataset and offset, and
    /// from now on deletes expired keys itself, judged on its own clock.
    pub(super) fn become_master(&mut self) {
        if self.repl.role == Role::Master {
            return;
        }
        self.repl.role = Role::Master;
        self.repl.upstream = None;
        self.replica_of = None;
    }

    pub(super) fn replication_cron(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.repl.cron_armed = false;
        let Role::Replica { of } = self.repl.role else {
            return; // A primary has no cron of its own here.
        };
        match &mut self.repl.upstream {
            Some(up) if up.synced || up.idle_crons < REPL_TIMEOUT_CRONS => {
                // A replica still waiting for its resync claims no offset, so that it counts
                // for no `WAIT`; its acknowledgement still tells the primary the link is up.
                if !up.synced {
                    up.idle_crons += 1;
                }
                let offset = if up.synced { self.repl.offset } else { 0 };
                let ack = ReplMsg::Ack {
                    sync: up.sync,
                    offset,
                };
                ctx.send(up.primary, Msg::Repl(ack));
            }
            _ => self.connect_to_primary(ctx, of),
        }
        if !self.repl.cron_armed {
            self.repl.cron_armed = true;
            set(ctx, REPLICATION_CRON_PERIOD, ServerTimer::ReplCron);
        }
    }

    /// A message of a replication link; nothing while the server is not open (inside its
    /// restart delay it accepts no connection, from a replica no more than from a client).
    pub(crate) fn on_repl(&mut self, ctx: &mut impl Host<Msg, Timer>, from: NodeId, msg: ReplMsg) {
        if !self.is_open() {
            return;
        }
        match msg {
            ReplMsg::Psync { sync } => {
                if self.repl.role != Role::Master {
                    ctx.send(from, Msg::Repl(ReplMsg::Reset { sync }));
                    return;
                }
                let link = Link {
                    sync,
                    acked: 0,
                    sent: 0,
                    sent_at_last_ack: 0,
                    queue: VecDeque::new(),
                    last_out: ctx.mono(),
                };
                self.repl.links.insert(from, link);
                self.full_resync(ctx, from);
            }
            ReplMsg::FullSync { sync, offset, data } => {
                let Some(up) = self.upstream_for(from, sync) else {
                    return;
                };
                up.synced = true;
                up.pending.retain(|&o, _| o > offset);
                self.db = data;
                self.repl.offset = offset;
                self.apply_pending();
                self.persist(ctx);
                self.ack(ctx);
            }
            ReplMsg::Stream { sync, offset, op } => {
                let applied = self.repl.offset;
                let Some(up) = self.upstream_for(from, sync) else {
                    return;
                };
                if up.synced && offset <= applied {
                    return; // A duplicate.
                }
                up.pending.insert(offset, op);
                if up.synced && self.apply_pending() {
                    self.persist(ctx);
                    self.ack(ctx);
                }
            }
            ReplMsg::Ack { sync, offset } => self.on_ack(ctx, from, sync, offset),
            ReplMsg::Reset { sync } => {
                if let Some(up) = self.upstream_for(from, sync) {
                    // Reconnect on the next cron.
                    up.synced = false;
                    up.pending.clear();
                    up.idle_crons = REPL_TIMEOUT_CRONS;
                }
            }
        }
    }

    /// The upstream link if `sync` from `from` is it.
    fn upstream_for(&mut self, from: NodeId, sync: u64) -> Option<&mut Upstream> {
        self.repl
            .upstream
            .as_mut()
            .filter(|up| up.primary == from && up.sync == sync)
    }

    /// Applies the stream writes that are next in order; true if any was.
    fn apply_pending(&mut self) -> bool {
        let mut progressed = false;
        loop {
            let next = self.repl.offset + 1;
            let Some(up) = self.repl.upstream.as_mut() else {
                return progressed;
            };
            let Some(op) = up.pending.remove(&next) else {
                return progressed;
            };
            self.apply(op);
            self.repl.offset = next;
            progressed = true;
        }
    }

    fn ack(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        if let Some(up) = &self.repl.upstream {
            let ack = ReplMsg::Ack {
                sync: up.sync,
                offset: self.repl.offset,
            };
            ctx.send(up.primary, Msg::Repl(ack));
        }
    }

    fn on_ack(&mut self, ctx: &mut impl Host<Msg, Timer>, from: NodeId, sync: u64, offset: u64) {
        let master = self.repl.role == Role::Master;
        let Some(link) = self
            .repl
            .links
            .get_mut(&from)
            .filter(|l| master && l.sync == sync)
        else {
            ctx.send(from, Msg::Repl(ReplMsg::Reset { sync }));
            return;
        };
        if offset < link.acked {
            return; // An older acknowledgement that the network reordered.
        }
        let stalled = offset == link.acked && link.sent_at_last_ack > offset;
        link.acked = offset;
        link.sent_at_last_ack = link.sent;
        if stalled {
            // What was sent before the previous acknowledgement never arrived.
            self.full_resync(ctx, from);
        } else {
            self.unblock_waits(ctx);
        }
    }

    /// Queues the dataset as it stands for `replica`.
    fn full_resync(&mut self, ctx: &mut impl Host<Msg, Timer>, replica: NodeId) {
        let Some(sync) = self.repl.links.get(&replica).map(|l| l.sync) else {
            return;
        };
        let msg = ReplMsg::FullSync {
            sync,
            offset: self.repl.offset,
            data: self.db.clone(),
        };
        self.enqueue(ctx, replica, msg);
    }

    /// A primary's write gets the next offset and goes into every replica's stream.
    pub(super) fn feed_replicas(&mut self, ctx: &mut impl Host<Msg, Timer>, op: ReplOp) {
        self.repl.offset += 1;
        if self.repl.links.is_empty() {
            return; // No replica (Redlock's instances, a single server): nothing to collect.
        }
        let offset = self.repl.offset;
        let links: Vec<(NodeId, u64)> = self.repl.links.iter().map(|(&n, l)| (n, l.sync)).collect();
        for (replica, sync) in links {
            self.enqueue(ctx, replica, ReplMsg::Stream { sync, offset, op });
        }
    }

    /// Puts a message on a replica's stream after the replication lag, behind every earlier
    /// one.
    fn enqueue(&mut self, ctx: &mut impl Host<Msg, Timer>, replica: NodeId, msg: ReplMsg) {
        let lag = self.config.replication_lag.sample(ctx.rng());
        let now = ctx.mono();
        let link = self.repl.links.get_mut(&replica).expect("a linked replica");
        let out = (now + lag).max(link.last_out);
        link.last_out = out;
        if link.queue.is_empty() && out <= now {
            link.sent = link.sent.max(offset_of(&msg));
            ctx.send(replica, Msg::Repl(msg));
            return;
        }
        link.queue.push_back((out, msg));
        if link.queue.len() == 1 {
            let timer = Timer::Server(ServerTimer::Ship {
                replica,
                sync: link.sync,
            });
            ctx.set_timer_at(ClockKind::Mono, out, timer);
        }
    }

    /// Sends what is due on a replica's stream and waits for the next.
    pub(super) fn ship_due(&mut self, ctx: &mut impl Host<Msg, Timer>, replica: NodeId, sync: u64) {
        let now = ctx.mono();
        let Some(link) = self.repl.links.get_mut(&replica).filter(|l| l.sync == sync) else {
            return; // The link was replaced or dropped.
        };
        while link.queue.front().is_some_and(|(out, _)| *out <= now) {
            let (_, msg) = link.queue.pop_front().expect("a due message");
            link.sent = link.sent.max(offset_of(&msg));
            ctx.send(replica, Msg::Repl(msg));
        }
        if let Some(&(out, _)) = link.queue.front() {
            ctx.set_timer_at(
                ClockKind::Mono,
                out,
                Timer::Server(ServerTimer::Ship { replica, sync }),
            );
        }
    }

    /// `WAIT`: reply at once when enough replicas acknowledged the caller's last write,
    /// otherwise block until they do or the timeout passes.
    pub(super) fn wait(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        client: NodeId,
        id: u64,
        replicas: u32,
        timeout: Dur,
    ) {
        if self.repl.role != Role::Master {
            ctx.send(client, reply(id, Reply::Readonly));
            return;
        }
        let target = self.repl.woff.get(&client).copied().unwrap_or(0);
        let count = self.acked_count(target);
        if count >= replicas {
            ctx.send(client, reply(id, Reply::Int(i64::from(count))));
            return;
        }
        let timer = (timeout > Dur::ZERO)
            .then(|| set(ctx, timeout, ServerTimer::WaitTimeout { client, id }));
        self.repl.waits.push(BlockedWait {
            client,
            id,
            target,
            replicas,
            timer,
        });
    }

    fn acked_count(&self, target: u64) -> u32 {
        self.repl
            .links
            .values()
            .filter(|l| l.acked >= target)
            .count() as u32
    }

    fn unblock_waits(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        let mut i = 0;
        while i < self.repl.waits.len() {
            let w = &self.repl.waits[i];
            let count = self.acked_count(w.target);
            if count >= w.replicas {
                let w = self.repl.waits.remove(i);
                if let Some(t) = w.timer {
                    ctx.cancel_timer(t);
                }
                ctx.send(w.client, reply(w.id, Reply::Int(i64::from(count))));
            } else {
                i += 1;
            }
        }
    }

    pub(super) fn wait_timed_out(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        client: NodeId,
        id: u64,
    ) {
        if let Some(pos) = self
            .repl
            .waits
            .iter()
            .position(|w| w.client == client && w.id == id)
        {
            let w = self.repl.waits.remove(pos);
            let count = self.acked_count(w.target);
            ctx.send(client, reply(id, Reply::Int(i64::from(count))));
        }
    }
}

fn reply(id: u64, reply: Reply) -> Msg {
    Msg::Reply { id, reply }
}

/// The offset a stream message brings the replica to.
fn offset_of(msg: &ReplMsg) -> u64 {
    match msg {
        ReplMsg::FullSync { offset, .. } | ReplMsg::Stream { offset, .. } => *offset,
        ReplMsg::Psync { .. } | ReplMsg::Ack { .. } | ReplMsg::Reset { .. } => 0,
    }
}
