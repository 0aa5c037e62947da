//! A message from send to handler. Loss and duplication are drawn at send time, a latency for
//! each copy. At arrival the receiver's incarnation and the link's gate decide: lost, held on
//! a hold-mode link until a heal releases it in send order, or arrived. A message or timer
//! that comes due while its node is paused is deferred, and handled at the resume.
//!
//! Every link is a TCP connection. A message that arrives at a crashed receiver, or at a
//! restarted one (it was meant for the old process), is lost and its sender's connection is
//! reset: a reset travels back one latency later, as a refused connect or an RST would. A
//! crash resets the dead process's open connections (`faults.rs`). A reset crosses links like
//! a message: lost on a drop-mode partition, held on a hold-mode one until the heal, deferred
//! at a paused peer.

use super::queue::{Action, Core, code};
use super::{NodeId, Process, Status, TimerId, World};
use crate::net::Gate;
use crate::time::Time;
use crate::trace::TraceKind;

/// A message on the wire.
pub(super) struct Delivery<M> {
    from: NodeId,
    to: NodeId,
    /// Send order on the world.
    sent: u64,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
}

/// A message held on a blocked hold-mode link.
pub(super) struct Held<M> {
    /// Send order on the world, so a hold-mode link releases in send order as TCP would.
    sent: u64,
    from_incarnation: u32,
    to_incarnation: u32,
    msg: M,
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
}

impl<P: Process> Core<P> {
    pub(super) fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let (loss_ppm, duplicate_ppm) = self.links.loss_and_duplicate(from, to);
        if self.net_rng.chance_ppm(loss_ppm) {
            self.lose(from, to, &msg, Loss::Link);
            return;
        }
        if self.net_rng.chance_ppm(duplicate_ppm) {
            self.launch(from, to, msg.clone());
        }
        self.launch(from, to, msg);
    }

    /// Puts one copy of a message on the wire with a fresh latency.
    fn launch(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let at = self.links.arrival(self.now, from, to, &mut self.net_rng);
        let from_incarnation = self.nodes[from.index()].incarnation;
        let to_incarnation = self.nodes[to.index()].incarnation;
        self.sends += 1;
        let sent = self.sends;
        let d = Delivery {
            from,
            to,
            sent,
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
    /// node order.
    pub(super) fn disconnect(&mut self, node: NodeId) -> Vec<NodeId> {
        let n = self.nodes.len();
        let a = node.index();
        let mut peers = Vec::new();
        for b in 0..n {
            if self.connected[a * n + b] || self.connected[b * n + a] {
                self.connected[a * n + b] = false;
                self.connected[b * n + a] = false;
                peers.push(NodeId(b as u32));
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

    /// Sends the messages held on links that are open again, in their original order, each
    /// after a fresh latency and never before the one ahead of it (a TCP stream). Returns how
    /// many were released.
    pub(super) fn flush_held(&mut self) -> usize {
        let open: Vec<(NodeId, NodeId)> = self
            .held
            .keys()
            .copied()
            .filter(|&(a, b)| self.links.gate(a, b) == Gate::Open)
            .collect();
        let mut released = 0;
        for (from, to) in open {
            let queue = self.held.remove(&(from, to)).expect("held queue exists");
            let (mut at, mut last_sent) = self
                .released_until
                .get(&(from, to))
                .copied()
                .unwrap_or((self.now, 0));
            at = at.max(self.now);
            for held in queue {
                if held.from_incarnation != self.nodes[from.index()].incarnation {
                    self.lose(from, to, &held.msg, Loss::SenderCrashed);
                    continue;
                }
                at = at.max(self.links.arrival(self.now, from, to, &mut self.net_rng));
                let Held {
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                } = held;
                let d = Delivery {
                    from,
                    to,
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                };
                self.push(at, Action::Deliver(d));
                last_sent = last_sent.max(sent);
                released += 1;
            }
            self.released_until.insert((from, to), (at, last_sent));
        }
        // Resets held on links open again go after the messages held there.
        let (open, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_resets)
            .into_iter()
            .partition(|&(from, to, _)| self.links.gate(from, to) == Gate::Open);
        self.held_resets = still;
        for (from, to, to_incarnation) in open {
            let behind = self
                .released_until
                .get(&(from, to))
                .map_or(self.now, |&(until, _)| until);
            self.launch_reset(from, to, to_incarnation, behind);
        }
        released
    }
}

impl<P: Process> World<P> {
    pub(super) fn deliver(&mut self, d: Delivery<P::Msg>) {
        let st = &self.core.nodes[d.to.index()];
        let receiver_up = st.status != Status::Down && st.incarnation == d.to_incarnation;
        // Messages released after a heal go first: a later one on an open link waits behind
        // them, whole, and arrives again when they have.
        if receiver_up && self.core.links.gate(d.from, d.to) == Gate::Open {
            if let Some(&(until, last_sent)) = self.core.released_until.get(&(d.from, d.to)) {
                if until > self.core.now && d.sent > last_sent {
                    self.core.push(until, Action::Deliver(d));
                    return;
                }
                if until <= self.core.now {
                    self.core.released_until.remove(&(d.from, d.to));
                }
            }
        }
        let Delivery {
            from,
            to,
            sent,
            from_incarnation,
            to_incarnation,
            msg,
        } = d;
        if !receiver_up {
            self.core.lose(from, to, &msg, Loss::ReceiverCrashed);
            // The receiver's host answers with a reset (a refused connect, an RST for a
            // connection its new process never had), if the message got through to it and
            // its sender is still the process that sent it.
            let sender = &self.core.nodes[from.index()];
            if self.core.links.gate(from, to) == Gate::Open
                && sender.status != Status::Down
                && sender.incarnation == from_incarnation
            {
                self.core.send_reset(to, from);
            }
            return;
        }
        match self.core.links.gate(from, to) {
            Gate::Drop => self.core.lose(from, to, &msg, Loss::Partition),
            Gate::Hold => {
                self.core.hash_event(code::HOLD, (from, to, &msg));
                self.core.trace_line(TraceKind::Hold, to, |c| {
                    format!(
                        "{} -> {} held by partition: {msg:?}",
                        c.name(from),
                        c.name(to)
                    )
                });
                let held = Held {
                    sent,
                    from_incarnation,
                    to_incarnation,
                    msg,
                };
                let queue = self.core.held.entry((from, to)).or_default();
                // Keep send order: a later-sent message may have arrived first.
                let pos = queue.partition_point(|h| h.sent < sent);
                queue.insert(pos, held);
            }
            Gate::Open => {
                self.arrive(from, to, msg);
            }
        }
    }

    /// A reset reached `to`, meant for its incarnation `to_incarnation`.
    pub(super) fn reset_arrives(&mut self, from: NodeId, to: NodeId, to_incarnation: u32) {
        let st = &self.core.nodes[to.index()];
        if st.status == Status::Down || st.incarnation != to_incarnation {
            return; // The connection died with the process that had it.
        }
        match self.core.links.gate(from, to) {
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
        self.core.hash_event(code::RESET, (from, to));
        self.core.trace_line(TraceKind::Reset, to, |c| {
            format!("{} -> {}: connection reset", c.name(from), c.name(to))
        });
        self.dispatch(to, |p, ctx| p.on_reset(ctx, from));
    }

    /// A message reached its receiver's host: handled now, or kept until it resumes.
    fn arrive(&mut self, from: NodeId, to: NodeId, msg: P::Msg) {
        let n = self.core.nodes.len();
        self.core.connected[from.index() * n + to.index()] = true;
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
