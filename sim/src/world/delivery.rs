//! A message from send to handler.
//!
//! **A TCP segment** (`send`) gets a latency at send time, never earlier than the segment
//! ahead of it on its link (a stream is in order), and the link's loss marks it lost on the
//! wire. At arrival the link's gate decides: open, it reaches the receiver's host; blocked in
//! drop mode, or lost on the wire, it *stalls*: it and everything behind it on the link wait
//! in the link's [`Stream`] for the sender's retransmission, which comes one RTO after the
//! segment was sent and then at doubling intervals (`net::TcpConfig`). A retransmission that
//! finds the link open delivers the whole queue, in order, one latency later; one that finds
//! the time since the first send past `TcpConfig::abort_after` aborts the connection: the
//! queue is lost, the sender learns at once (`ETIMEDOUT`), and the peer's kernel still has its
//! end, so the peer's next segment that reaches the sender is answered with a reset. Blocked
//! in hold mode, a segment waits in the link's held queue and goes at the heal in send order.
//!
//! **A datagram** (`send_datagram`) draws loss and duplication and its own latency, and is
//! lost at a drop-mode partition or a crashed receiver.
//!
//! At the receiver's host a keepalive probe is answered by its kernel
//! (`Process::kernel_answer`), whatever the process is doing. A message or timer that comes
//! due while its process is paused is deferred, and handled at the resume (the kernel has
//! acknowledged and buffered the bytes). A frozen host's links are blocked both ways, as if
//! by a drop-mode partition: nothing reaches it and nothing answers.
//!
//! A segment that arrives at a crashed receiver, or at a restarted one (it was meant for the
//! old process), is lost and its sender's connection is reset: a reset travels back one
//! latency later, as a refused connect or an RST would. A crash resets the dead process's open
//! connections (`faults.rs`). A reset crosses links like a datagram: lost on a drop-mode
//! partition, held on a hold-mode one until the heal, deferred at a paused peer.

use std::collections::VecDeque;

use super::queue::{Action, Core, code};
use super::{NodeId, Process, Status, TimerId, World};
use crate::net::{Gate, TcpConfig};
use crate::time::{Dur, Time};
use crate::trace::TraceKind;

/// A message on the wire.
pub(super) struct Delivery<M> {
    from: NodeId,
    to: NodeId,
    /// Send order on the world.
    sent: u64,
    /// When it was first sent: a stalled segment's retransmissions count from it.
    sent_at: Time,
    /// A datagram rather than a TCP segment.
    datagram: bool,
    /// A segment the link's loss took: it stalls when it would have arrived.
    lost: bool,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
}

/// A message waiting on a blocked link: for the heal (hold mode) or for a retransmission.
pub(super) struct Held<M> {
    /// Send order on the world, so a link releases in send order as TCP would.
    sent: u64,
    sent_at: Time,
    datagram: bool,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
}

impl<M> Delivery<M> {
    fn hold(self) -> Held<M> {
        Held {
            sent: self.sent,
            sent_at: self.sent_at,
            datagram: self.datagram,
            from_incarnation: self.from_incarnation,
            to_incarnation: self.to_incarnation,
            msg: self.msg,
        }
    }
}

impl<M> Held<M> {
    fn on(self, from: NodeId, to: NodeId) -> Delivery<M> {
        Delivery {
            from,
            to,
            sent: self.sent,
            sent_at: self.sent_at,
            datagram: self.datagram,
            lost: false,
            from_incarnation: self.from_incarnation,
            to_incarnation: self.to_incarnation,
            msg: self.msg,
        }
    }
}

/// Inserts `item` into `queue` by send order: a later-sent message may have arrived first.
fn insert_by_send<M>(queue: &mut VecDeque<Held<M>>, item: Held<M>) {
    let pos = queue.partition_point(|h| h.sent < item.sent);
    queue.insert(pos, item);
}

/// One directed link's TCP state: its order, and the retransmission in progress.
pub(super) struct Stream<M> {
    /// The latest arrival scheduled on the link: a later segment never arrives sooner.
    tail: Time,
    /// After a release (a retransmission or a heal): when the last released segment arrives,
    /// and its send order. A segment sent after it and still in flight waits for it.
    released: Option<(Time, u64)>,
    /// Segments waiting for the sender's retransmission, in send order: the first was lost
    /// (a partition, the link's loss, a frozen host) and the rest queue behind it.
    stalled: VecDeque<Held<M>>,
    /// When the first of them was first sent: retries are counted from it.
    since: Time,
    /// The connection's retransmission timeout when the stall began.
    rto: Dur,
    /// How often the retransmission timer has fired since.
    fired: u32,
    /// When the next retransmission is due.
    next: Time,
    /// Bumped whenever the next retransmission moves, so that a stale one is ignored.
    generation: u32,
    /// The receiver's kernel aborted this connection: the next segment that reaches it is
    /// answered with a reset.
    stale: bool,
}

impl<M> Default for Stream<M> {
    fn default() -> Stream<M> {
        Stream {
            tail: Time::ZERO,
            released: None,
            stalled: VecDeque::new(),
            since: Time::ZERO,
            rto: Dur::ZERO,
            fired: 0,
            next: Time::ZERO,
            generation: 0,
            stale: false,
        }
    }
}

impl<M> Stream<M> {
    /// How many segments wait for a retransmission.
    pub(super) fn stalled(&self) -> usize {
        self.stalled.len()
    }
}

/// What came due while its node was paused.
pub(super) enum Deferred<P: Process> {
    Message { from: NodeId, msg: P::Msg },
    Timer { id: TimerId },
    Reset { from: NodeId },
}

/// Why a message was lost, for the trace.
#[derive(Clone, Copy, Debug, Hash)]
enum Loss {
    Link,
    Partition,
    ReceiverCrashed,
    SenderCrashed,
    /// The sender's retransmissions ran out and its kernel aborted the connection.
    Aborted,
    /// The receiver's kernel had aborted the connection it was sent on.
    Stale,
}

impl<P: Process> Core<P> {
    fn stream(&mut self, from: NodeId, to: NodeId) -> &mut Stream<P::Msg> {
        let n = self.nodes.len();
        &mut self.streams[from.index() * n + to.index()]
    }

    /// Whether the link `from → to` lets a packet through: a frozen host at either end blocks
    /// it as a drop-mode partition would.
    pub(super) fn gate(&self, from: NodeId, to: NodeId) -> Gate {
        if self.nodes[from.index()].frozen || self.nodes[to.index()].frozen {
            Gate::Drop
        } else {
            self.links.gate(from, to)
        }
    }

    /// Sends a segment of the TCP connection `from → to`.
    pub(super) fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let (loss_ppm, _) = self.links.loss_and_duplicate(from, to);
        let lost = self.net_rng.chance_ppm(loss_ppm);
        self.launch(from, to, msg, false, lost);
    }

    /// Sends a datagram `from → to`: lost, doubled or overtaken as the link draws.
    pub(super) fn send_datagram(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let (loss_ppm, duplicate_ppm) = self.links.loss_and_duplicate(from, to);
        if self.net_rng.chance_ppm(loss_ppm) {
            self.lose(from, to, &msg, Loss::Link);
            return;
        }
        if self.net_rng.chance_ppm(duplicate_ppm) {
            self.launch(from, to, msg.clone(), true, false);
        }
        self.launch(from, to, msg, true, false);
    }

    /// Puts one message on the wire with a fresh latency; a segment no sooner than the one
    /// ahead of it.
    fn launch(&mut self, from: NodeId, to: NodeId, msg: P::Msg, datagram: bool, lost: bool) {
        let mut at = self.links.arrival(self.now, from, to, &mut self.net_rng);
        if !datagram {
            let s = self.stream(from, to);
            at = at.max(s.tail);
            s.tail = at;
        }
        let from_incarnation = self.nodes[from.index()].incarnation;
        let to_incarnation = self.nodes[to.index()].incarnation;
        self.sends += 1;
        let d = Delivery {
            from,
            to,
            sent: self.sends,
            sent_at: self.now,
            datagram,
            lost,
            from_incarnation,
            to_incarnation,
            msg,
        };
        self.push(at, Action::Deliver(d));
    }

    /// `from`'s host resets `to`'s connection to it: the reset reaches `to` one latency of
    /// the link `from → to` later, if `to` is still the same process then.
    pub(super) fn send_reset(&mut self, from: NodeId, to: NodeId) {
        let to_incarnation = self.nodes[to.index()].incarnation;
        self.launch_reset(from, to, to_incarnation, self.now);
    }

    /// Puts a reset meant for `to`'s incarnation `to_incarnation` on the link `from → to`
    /// with a fresh latency, arriving no sooner than `not_before`.
    fn launch_reset(&mut self, from: NodeId, to: NodeId, to_incarnation: u32, not_before: Time) {
        let at = self
            .links
            .arrival(self.now, from, to, &mut self.reset_rng)
            .max(not_before);
        self.push(
            at,
            Action::Reset {
                from,
                to,
                to_incarnation,
            },
        );
    }

    /// Forgets every connection of `node` (it crashed), returning the peers it had, in
    /// node order. What it was retransmitting dies with it.
    pub(super) fn disconnect(&mut self, node: NodeId) -> Vec<NodeId> {
        let n = self.nodes.len();
        let a = node.index();
        let mut peers = Vec::new();
        for b in 0..n {
            let peer = NodeId(b as u32);
            let out = self.stream(node, peer);
            out.generation = out.generation.wrapping_add(1);
            out.stale = false;
            let lost = std::mem::take(&mut out.stalled);
            for h in lost {
                self.lose(node, peer, &h.msg, Loss::SenderCrashed);
            }
            self.stream(peer, node).stale = false;
            if self.connected[a * n + b] || self.connected[b * n + a] {
                self.connected[a * n + b] = false;
                self.connected[b * n + a] = false;
                peers.push(peer);
            }
        }
        peers
    }

    fn lose(&mut self, from: NodeId, to: NodeId, msg: &P::Msg, why: Loss) {
        self.hash_event(code::DROP, (from, to, why, msg));
        self.trace_line(TraceKind::Drop, to, |c| {
            format!("{} -> {} lost ({why:?}): {msg:?}", c.name(from), c.name(to))
        });
    }

    /// A segment could not get through: it waits for its sender's retransmission, behind any
    /// that already do. The first to stall starts the retransmission timer.
    fn stall(&mut self, d: Delivery<P::Msg>) {
        let (from, to) = (d.from, d.to);
        self.hash_event(code::STALL, (from, to, d.sent));
        self.trace_line(TraceKind::Stall, to, |c| {
            format!(
                "{} -> {} not acknowledged, retransmits: {:?}",
                c.name(from),
                c.name(to),
                d.msg
            )
        });
        let first = self.stream(from, to).stalled.is_empty();
        let since = d.sent_at;
        insert_by_send(&mut self.stream(from, to).stalled, d.hold());
        if !first {
            return;
        }
        let rtt = self.links.rtt(from, to);
        let now = self.now;
        let s = self.stream(from, to);
        s.since = since;
        s.rto = TcpConfig::rto(rtt);
        s.fired = 0;
        // The timer was set at the send; firings the segment's flight outlasted are gone.
        let mut next = TcpConfig::timer_wheel(since, s.rto);
        while next <= now {
            s.fired += 1;
            next = TcpConfig::timer_wheel(next, TcpConfig::back_off(s.rto, s.fired));
        }
        let next = self.within_user_timeout(since, next);
        self.arm_retransmit(from, to, next);
    }

    /// `next`, the retransmission timer's next firing for a stall since `since`, brought
    /// forward to the `TCP_USER_TIMEOUT` when one is set (Linux clamps the RTO timer to it,
    /// `tcp_clamp_rto_to_user_timeout`), and never before now.
    fn within_user_timeout(&self, since: Time, next: Time) -> Time {
        match self.tcp.user_timeout {
            Some(_) => next.min(since.saturating_add(self.tcp.abort_after()).max(self.now)),
            None => next,
        }
    }

    /// Sets the retransmission of `from → to` for `at`, replacing any pending one.
    fn arm_retransmit(&mut self, from: NodeId, to: NodeId, at: Time) {
        let s = self.stream(from, to);
        s.next = at;
        s.generation = s.generation.wrapping_add(1);
        let generation = s.generation;
        self.push(
            at,
            Action::Retransmit {
                from,
                to,
                generation,
            },
        );
    }

    /// Sends every segment in `queue` on `from → to` again, now, in order: each after a fresh
    /// latency and no sooner than the one ahead of it. Segments of a sender that crashed since
    /// are lost. Returns how many went.
    fn release(&mut self, from: NodeId, to: NodeId, queue: VecDeque<Held<P::Msg>>) -> usize {
        let now = self.now;
        let (mut at, mut last_sent) = match self.stream(from, to).released {
            Some((until, last)) => (until.max(now), last),
            None => (now, 0),
        };
        let mut released = 0;
        for held in queue {
            if held.from_incarnation != self.nodes[from.index()].incarnation {
                self.lose(from, to, &held.msg, Loss::SenderCrashed);
                continue;
            }
            at = at.max(self.links.arrival(now, from, to, &mut self.net_rng));
            last_sent = last_sent.max(held.sent);
            self.push(at, Action::Deliver(held.on(from, to)));
            released += 1;
        }
        // Segments still in flight that would arrive sooner wait for the last released one
        // and are then handled in send order; one sent from now on goes after them.
        let s = self.stream(from, to);
        s.tail = s.tail.max(at.saturating_add(Dur::from_nanos(1)));
        s.released = Some((at, last_sent));
        released
    }

    /// Sends the messages held on links that are open again, in their original order, each
    /// after a fresh latency and never before the one ahead of it (a TCP stream). Returns how
    /// many were released.
    pub(super) fn flush_held(&mut self) -> usize {
        let open: Vec<(NodeId, NodeId)> = self
            .held
            .keys()
            .copied()
            .filter(|&(a, b)| self.gate(a, b) == Gate::Open)
            .collect();
        let mut released = 0;
        for (from, to) in open {
            let queue = self.held.remove(&(from, to)).expect("held queue exists");
            released += self.release(from, to, queue);
        }
        // Resets held on links open again go after the messages held there.
        let (open, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_resets)
            .into_iter()
            .partition(|&(from, to, _)| self.gate(from, to) == Gate::Open);
        self.held_resets = still;
        for (from, to, to_incarnation) in open {
            let behind = self
                .stream(from, to)
                .released
                .map_or(self.now, |(until, _)| until);
            self.launch_reset(from, to, to_incarnation, behind);
        }
        released
    }

    /// A frozen host thaws: the retransmissions its kernel missed go now.
    pub(super) fn thaw(&mut self, node: NodeId) {
        let now = self.now;
        for b in 0..self.nodes.len() {
            let peer = NodeId(b as u32);
            let s = self.stream(node, peer);
            if !s.stalled.is_empty() && s.next <= now {
                self.arm_retransmit(node, peer, now);
            }
        }
    }
}

impl<P: Process> World<P> {
    pub(super) fn deliver(&mut self, d: Delivery<P::Msg>) {
        if d.datagram {
            return self.deliver_datagram(d);
        }
        let (from, to) = (d.from, d.to);
        // Behind a stalled segment, a segment waits its turn, whatever the link does now.
        if self.core.stream(from, to).stalled() > 0 {
            self.core.hash_event(code::STALL, (from, to, d.sent));
            insert_by_send(&mut self.core.stream(from, to).stalled, d.hold());
            return;
        }
        // Segments released by a retransmission or a heal go first: a later one still in
        // flight waits behind them, whole, and arrives again when they have.
        if let Some((until, last_sent)) = self.core.stream(from, to).released {
            if until > self.core.now && d.sent > last_sent {
                self.core.push(until, Action::Deliver(d));
                return;
            }
            if until <= self.core.now {
                self.core.stream(from, to).released = None;
            }
        }
        match self.core.gate(from, to) {
            Gate::Drop => return self.core.stall(d),
            Gate::Hold => return self.hold(d),
            Gate::Open if d.lost => return self.core.stall(d),
            Gate::Open => {}
        }
        let st = &self.core.nodes[to.index()];
        if st.status == Status::Down || st.incarnation != d.to_incarnation {
            self.core.lose(from, to, &d.msg, Loss::ReceiverCrashed);
            // The receiver's host answers with a reset (a refused connect, an RST for a
            // connection its new process never had), if its sender is still the process that
            // sent it.
            let sender = &self.core.nodes[from.index()];
            if sender.status != Status::Down && sender.incarnation == d.from_incarnation {
                self.core.send_reset(to, from);
            }
            return;
        }
        if self.core.stream(from, to).stale {
            // The receiver's kernel aborted the connection this was sent on: an RST answers.
            self.core.lose(from, to, &d.msg, Loss::Stale);
            self.core.send_reset(to, from);
            return;
        }
        self.arrive(from, to, d.msg);
    }

    fn deliver_datagram(&mut self, d: Delivery<P::Msg>) {
        let (from, to) = (d.from, d.to);
        let st = &self.core.nodes[to.index()];
        if st.status == Status::Down || st.incarnation != d.to_incarnation {
            return self.core.lose(from, to, &d.msg, Loss::ReceiverCrashed);
        }
        match self.core.gate(from, to) {
            Gate::Drop => self.core.lose(from, to, &d.msg, Loss::Partition),
            Gate::Hold => self.hold(d),
            Gate::Open => self.arrive(from, to, d.msg),
        }
    }

    /// A message reached a link blocked in hold mode: it waits for the heal.
    fn hold(&mut self, d: Delivery<P::Msg>) {
        let (from, to) = (d.from, d.to);
        self.core.hash_event(code::HOLD, (from, to, &d.msg));
        self.core.trace_line(TraceKind::Hold, to, |c| {
            format!(
                "{} -> {} held by partition: {:?}",
                c.name(from),
                c.name(to),
                d.msg
            )
        });
        let queue = self.core.held.entry((from, to)).or_default();
        insert_by_send(queue, d.hold());
    }

    /// The retransmission timer of `from → to` fired (if `generation` is still its own).
    pub(super) fn retransmit(&mut self, from: NodeId, to: NodeId, generation: u32) {
        let s = self.core.stream(from, to);
        if s.generation != generation || s.stalled() == 0 {
            return;
        }
        let since = s.since;
        // A frozen host's kernel runs no timers: this one fires at the thaw.
        if self.core.nodes[from.index()].frozen {
            return;
        }
        self.core.events += 1;
        let now = self.core.now;
        if now.saturating_since(since) >= self.core.tcp.abort_after() {
            return self.abort(from, to);
        }
        let (loss_ppm, _) = self.core.links.loss_and_duplicate(from, to);
        let lost = self.core.net_rng.chance_ppm(loss_ppm);
        let gate = match self.core.gate(from, to) {
            Gate::Open if lost => Gate::Drop,
            gate => gate,
        };
        self.core
            .hash_event(code::RETRANSMIT, (from, to, gate == Gate::Drop));
        match gate {
            Gate::Open => {
                let queue = std::mem::take(&mut self.core.stream(from, to).stalled);
                let n = self.core.release(from, to, queue);
                self.core.trace_line(TraceKind::Retransmit, from, |c| {
                    format!(
                        "{} -> {} retransmits, gets through: {n} segment(s)",
                        c.name(from),
                        c.name(to)
                    )
                });
            }
            Gate::Hold => {
                let queue = std::mem::take(&mut self.core.stream(from, to).stalled);
                let held = self.core.held.entry((from, to)).or_default();
                for h in queue {
                    insert_by_send(held, h);
                }
            }
            Gate::Drop => {
                let s = self.core.stream(from, to);
                s.fired += 1;
                let interval = TcpConfig::back_off(s.rto, s.fired);
                let next = self
                    .core
                    .within_user_timeout(since, TcpConfig::timer_wheel(now, interval));
                self.core.trace_line(TraceKind::Retransmit, from, |c| {
                    format!(
                        "{} -> {} retransmits, not acknowledged; next in {interval}",
                        c.name(from),
                        c.name(to)
                    )
                });
                self.core.arm_retransmit(from, to, next);
            }
        }
    }

    /// `from`'s retransmissions to `to` ran out: its kernel aborts the connection (ETIMEDOUT).
    /// What waited is lost; `from` learns now; `to`'s kernel still has its end, and learns at
    /// its next segment that reaches `from`, which is answered with a reset.
    fn abort(&mut self, from: NodeId, to: NodeId) {
        let s = self.core.stream(from, to);
        s.generation = s.generation.wrapping_add(1);
        let lost = std::mem::take(&mut s.stalled);
        self.core.hash_event(code::ABORT, (from, to));
        self.core.trace_line(TraceKind::Reset, from, |c| {
            format!(
                "{} -> {}: retransmissions ran out, connection aborted ({} segment(s) lost)",
                c.name(from),
                c.name(to),
                lost.len()
            )
        });
        for h in lost {
            self.core.lose(from, to, &h.msg, Loss::Aborted);
        }
        self.core.stream(to, from).stale = true;
        self.reset(to, from);
    }

    /// A reset reached `to`, meant for its incarnation `to_incarnation`.
    pub(super) fn reset_arrives(&mut self, from: NodeId, to: NodeId, to_incarnation: u32) {
        let st = &self.core.nodes[to.index()];
        if st.status == Status::Down || st.incarnation != to_incarnation {
            return; // The connection died with the process that had it.
        }
        match self.core.gate(from, to) {
            Gate::Drop => {
                self.core.hash_event(code::DROP, (from, to, "reset"));
                self.core.trace_line(TraceKind::Drop, to, |c| {
                    format!("{} -> {} reset lost (Partition)", c.name(from), c.name(to))
                });
            }
            Gate::Hold => {
                self.core.hash_event(code::HOLD, (from, to, "reset"));
                self.core.held_resets.push((from, to, to_incarnation));
            }
            Gate::Open => self.reset(from, to),
        }
    }

    /// `to` learns that its connection to `from` was reset: now, or at its resume.
    fn reset(&mut self, from: NodeId, to: NodeId) {
        if self.core.nodes[to.index()].status == Status::Paused {
            self.core.hash_event(code::DEFER, (from, to, "reset"));
            self.core.nodes[to.index()]
                .deferred
                .push_back(Deferred::Reset { from });
            return;
        }
        let n = self.core.nodes.len();
        self.core.connected[to.index() * n + from.index()] = false;
        self.core.connected[from.index() * n + to.index()] = false;
        // Its next segment to `from` opens a new connection.
        self.core.stream(to, from).stale = false;
        self.core.hash_event(code::RESET, (from, to));
        self.core.trace_line(TraceKind::Reset, to, |c| {
            format!("{} -> {}: connection reset", c.name(from), c.name(to))
        });
        self.dispatch(to, |p, ctx| p.on_reset(ctx, from));
    }

    /// A message reached its receiver's host: answered by its kernel, handled now, or kept
    /// until the process resumes.
    fn arrive(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let n = self.core.nodes.len();
        self.core.connected[from.index() * n + to.index()] = true;
        if let Some(answer) = self.procs[to.index()].kernel_answer(from, &msg) {
            self.core.hash_event(code::KERNEL, (from, to, &msg));
            self.core.trace_line(TraceKind::Deliver, to, |c| {
                format!(
                    "{} -> {}: {msg:?}, answered by its kernel",
                    c.name(from),
                    c.name(to)
                )
            });
            self.core.send_datagram(to, from, answer);
            return;
        }
        if self.core.nodes[to.index()].status == Status::Paused {
            self.core.hash_event(code::DEFER, (from, to, &msg));
            self.core.trace_line(TraceKind::Defer, to, |c| {
                format!(
                    "{} -> {} waits for resume: {msg:?}",
                    c.name(from),
                    c.name(to)
                )
            });
            self.core.nodes[to.index()]
                .deferred
                .push_back(Deferred::Message { from, msg });
            return;
        }
        self.core.hash_event(code::DELIVER, (from, to, &msg));
        self.core.trace_line(TraceKind::Deliver, to, |c| {
            format!("{} -> {}: {msg:?}", c.name(from), c.name(to))
        });
        self.dispatch(to, |p, ctx| p.on_message(ctx, from, msg));
    }

    pub(super) fn fire_timer(&mut self, id: TimerId) {
        let slot = &self.core.timers[id.slot as usize];
        let (node, timer) = (slot.node, slot.timer.expect("live timer"));
        if self.core.nodes[node.index()].status == Status::Paused {
            self.core.timers[id.slot as usize].deferred = true;
            self.core.hash_event(code::DEFER, (node, id.slot));
            self.core.nodes[node.index()]
                .deferred
                .push_back(Deferred::Timer { id });
            return;
        }
        self.core.free_timer(id.slot);
        self.core.hash_event(code::TIMER, (node, &timer));
        self.core
            .trace_line(TraceKind::Timer, node, |_| format!("timer {timer:?}"));
        self.dispatch(node, |p, ctx| p.on_timer(ctx, id, timer));
    }

    /// Handles one item of a resumed node's backlog; a timer cancelled meanwhile is skipped.
    pub(super) fn redeliver(&mut self, node: NodeId, item: Deferred<P>) {
        match item {
            Deferred::Message { from, msg } => {
                self.core.events += 1;
                self.arrive(from, node, msg);
            }
            Deferred::Reset { from } => {
                self.core.events += 1;
                self.reset(from, node);
            }
            Deferred::Timer { id } => {
                if let Some(s) = self.core.timers.get_mut(id.slot as usize) {
                    if s.generation == id.generation && s.timer.is_some() {
                        s.deferred = false;
                        self.core.events += 1;
                        self.fire_timer(id);
                    }
                }
            }
        }
    }
}
