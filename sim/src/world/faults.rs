//! What each fault does, and the fault log.
//!
//! A fault applies at once. One that lasts also gets an entry in `Core::timed`, the one table
//! of timed faults: its id, the fault, and what its kind keeps until its end (`TimedState`).
//! Every end is one action, `Action::End { id }`, which `World::end_timed` dispatches on the
//! kind; a clock strobe's steps in between are `Action::Step { id }`. A fault scheduled on a
//! mark waits as a `Trigger` until `Core::mark` fires it.

use std::collections::BTreeMap;

use super::queue::{Action, Core, code};
use super::{NodeId, Process, Status, World};
use crate::fault::{AppliedFault, Fault};
use crate::net::PartitionMode;
use crate::time::{Dur, Time};
use crate::trace::TraceKind;

/// A fault waiting for a node to reach a mark.
pub(super) struct Trigger {
    /// Its place among the faults scheduled, from 0.
    pub(super) index: usize,
    pub(super) node: NodeId,
    pub(super) mark: String,
    pub(super) occurrence: u32,
    pub(super) before: Option<Time>,
    pub(super) fault: Fault,
    /// Its id among the aimed faults, when it is aimed at a role.
    pub(super) aim: Option<u32>,
}

/// The triggers still waiting, by node, mark and occurrence, so that reaching a mark finds its
/// triggers at once however many a chaos schedule placed (a scan of them all made each mark
/// cost as much as the schedule was long). Each entry keeps its triggers in the order they were
/// scheduled, so they fire in that order, as from one list.
#[derive(Default)]
pub(super) struct Triggers {
    by: BTreeMap<NodeId, BTreeMap<String, BTreeMap<u32, Vec<Trigger>>>>,
    len: usize,
}

impl Triggers {
    pub(super) fn push(&mut self, t: Trigger) {
        self.len += 1;
        self.by
            .entry(t.node)
            .or_default()
            .entry(t.mark.clone())
            .or_default()
            .entry(t.occurrence)
            .or_default()
            .push(t);
    }

    /// Takes out the triggers of `node`'s `occurrence`-th `mark`, in schedule order.
    fn take(&mut self, node: NodeId, mark: &str, occurrence: u32) -> Vec<Trigger> {
        let taken = self
            .by
            .get_mut(&node)
            .and_then(|marks| marks.get_mut(mark))
            .and_then(|occurrences| occurrences.remove(&occurrence))
            .unwrap_or_default();
        self.len -= taken.len();
        taken
    }

    /// How many are waiting.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Every trigger waiting, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Trigger> {
        self.by
            .values()
            .flat_map(BTreeMap::values)
            .flat_map(BTreeMap::values)
            .flatten()
    }
}

/// A timed fault in force: every partition, delay, degrade and strobe, and a pause, crash or
/// slew whose end the world has scheduled (the resume, the restart, the slew's end). It leaves
/// the table at its end, a partition also at a heal-all; one without a duration stays.
pub(super) struct Timed {
    id: u32,
    /// The fault as applied.
    fault: Fault,
    state: TimedState,
}

/// What a timed fault keeps until its end, by kind.
enum TimedState {
    /// A partition blocking `links`. Its end heals it, unless a heal-all did first.
    Partition {
        links: Vec<(NodeId, NodeId)>,
        mode: PartitionMode,
    },
    /// Extra latency on `links`, taken away at the end.
    Delay {
        links: Vec<(NodeId, NodeId)>,
        extra: Dur,
    },
    /// A degrade; its links and chances live in [`crate::net::Links`] under the same id.
    Degrade,
    /// A clock strobe in progress.
    Strobe {
        node: NodeId,
        delta_ns: i64,
        period: Dur,
        /// True time at which it ends.
        end: Time,
        /// Whether its last step left the clock `delta_ns` away from where it would be.
        off: bool,
    },
    /// A timed pause: its end resumes the node unless it has been resumed or paused again
    /// since (its pause generation has moved on).
    Pause { node: NodeId, generation: u32 },
    /// A timed freeze: its end thaws the host unless it has been resumed or frozen again since.
    /// Its process stays paused if a pause of its own outlasts the freeze.
    Thaw { node: NodeId, generation: u32 },
    /// A crash with a restart: its end restarts the node if it is still the incarnation that
    /// crashed.
    Crash { node: NodeId, incarnation: u32 },
    /// A terminate's grace: its end kills the node if it is still the incarnation that was
    /// told to stop and is up.
    Kill { node: NodeId, incarnation: u32 },
    /// A watchdog set as the node stalled: its end kills it if it is still paused since then.
    Watchdog { node: NodeId, stall: u32 },
    /// A wall clock slew: its end is the clock's, unless a step or another slew replaced it.
    Slew { node: NodeId },
}

impl<P: Process> Core<P> {
    /// Enters a timed fault in the table and returns its id.
    fn add_timed(&mut self, fault: Fault, state: TimedState) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.timed.push(Timed { id, fault, state });
        id
    }

    /// Reaches a mark on `node`: counts it, and fires the faults triggered by this occurrence.
    pub(super) fn mark(&mut self, node: NodeId, mark: &'static str) {
        self.hash_event(code::MARK, (node, mark));
        self.trace_line(TraceKind::Mark, node, |_| format!("mark {mark}"));
        let marks = &mut self.nodes[node.index()].marks;
        // The same literal is usually the same pointer: compare that before the bytes.
        let same = |m: &&'static str| std::ptr::eq(*m, mark) || *m == mark;
        let count = match marks.iter_mut().find(|(m, _)| same(m)) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                marks.push((mark, 1));
                1
            }
        };
        if self.triggers.len() == 0 {
            return;
        }
        for t in self.triggers.take(node, mark, count) {
            // A lapsed trigger changes nothing in the run (it is neither hashed nor traced);
            // it is kept only to be reported as unfired.
            if t.before.is_none_or(|b| self.now < b) {
                self.fired.push((t.fault, t.aim));
            } else {
                self.lapsed.push(t);
            }
        }
    }

    fn log_fault(&mut self, fault: &Fault, nodes: Vec<NodeId>, detail: String) {
        self.log(fault, nodes, detail, false);
    }

    fn log(&mut self, fault: &Fault, nodes: Vec<NodeId>, detail: String, ended: bool) {
        self.hash_event(code::FAULT, (fault, ended));
        let node = nodes.first().copied().unwrap_or(NodeId(0));
        let detail = match &self.aiming {
            Some(role) if !ended => format!("{detail} (the {role})"),
            _ => detail,
        };
        self.trace_line(TraceKind::Fault, node, |_| detail.clone());
        let records_before = self.history.len();
        let time = self.now;
        let fault = fault.clone();
        self.fault_log.push(AppliedFault {
            time,
            fault,
            nodes,
            detail,
            ended,
            records_before,
        });
    }

    fn names_of(&self, nodes: &[NodeId]) -> String {
        let names: Vec<&str> = nodes.iter().map(|&n| self.name(n)).collect();
        format!("{{{}}}", names.join(", "))
    }
}

impl<P: Process> World<P> {
    /// Applies a fault now and logs it.
    pub(super) fn apply(&mut self, fault: Fault) {
        match fault {
            Fault::Pause { node, duration } => self.pause(node, duration, false),
            Fault::Freeze { node, duration } => self.pause(node, duration, true),
            Fault::Resume { node } => self.resume(node),
            Fault::Crash {
                node,
                restart_after,
            } => self.crash(node, restart_after, ""),
            Fault::Terminate { node, grace } => self.terminate(node, grace),
            Fault::Restart { node } => self.restart(node),
            Fault::Partition {
                ref shape,
                mode,
                duration,
            } => {
                let cut = shape.resolve(self.procs.len(), &mut self.core.fault_rng);
                let links = cut.links;
                self.core.links.block(&links, mode, true);
                let detail = self.describe_partition(&cut.cut_off, &links, mode, duration);
                let nodes = cut.cut_off;
                self.core.log_fault(&fault, nodes, detail);
                let id = self
                    .core
                    .add_timed(fault, TimedState::Partition { links, mode });
                if let Some(d) = duration {
                    self.core
                        .push(self.core.now.saturating_add(d), Action::End { id });
                }
            }
            Fault::Heal => {
                let (healed, kept): (Vec<Timed>, Vec<Timed>) = std::mem::take(&mut self.core.timed)
                    .into_iter()
                    .partition(|t| matches!(t.state, TimedState::Partition { .. }));
                self.core.timed = kept;
                self.heal(healed);
            }
            Fault::ClockStep { node, delta_ns } => {
                let now = self.core.now;
                self.core.nodes[node.index()].clocks.step(now, delta_ns);
                self.core.rearm(node, true);
                let detail = format!(
                    "{} wall clock steps {}",
                    self.core.name(node),
                    signed(delta_ns)
                );
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::ClockSlew {
                node,
                delta_ns,
                rate_ppm,
            } => {
                let now = self.core.now;
                let end = self.core.nodes[node.index()]
                    .clocks
                    .start_slew(now, delta_ns, rate_ppm);
                let id = self
                    .core
                    .add_timed(fault.clone(), TimedState::Slew { node });
                self.core.push(end, Action::End { id });
                self.core.rearm(node, true);
                let detail = format!(
                    "{} wall clock slews {} at {rate_ppm} ppm until {end}",
                    self.core.name(node),
                    signed(delta_ns)
                );
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::ClockDrift { node, drift_ppm } => {
                let now = self.core.now;
                self.core.nodes[node.index()]
                    .clocks
                    .set_drift(now, drift_ppm);
                self.core.rearm(node, false);
                let detail = format!("{} clocks drift {drift_ppm:+} ppm", self.core.name(node));
                self.core.log_fault(&fault, vec![node], detail);
            }
            Fault::Delay { .. } => self.delay(fault),
            Fault::Degrade { .. } => self.degrade(fault),
            Fault::ClockStrobe { .. } => self.strobe(fault),
        }
    }

    /// The end of timed fault `id`. It is an event unless it is stale: a partition healed
    /// earlier by a heal-all (gone from the table), a timed resume of a node resumed or paused
    /// again since, a restart for an old incarnation, a slew replaced since.
    pub(super) fn end_timed(&mut self, id: u32) {
        let Some(pos) = self.core.timed.iter().position(|t| t.id == id) else {
            return;
        };
        let t = self.core.timed.remove(pos);
        match t.state {
            TimedState::Partition { .. } => {
                self.core.events += 1;
                self.heal(vec![t]);
            }
            TimedState::Delay { links, extra } => {
                self.core.events += 1;
                for &(a, b) in &links {
                    self.core.links.add_extra(a, b, extra, false);
                }
                let detail = format!("delay of {extra} ends");
                let nodes = t.fault.nodes();
                self.core.log(&t.fault, nodes, detail, true);
            }
            TimedState::Degrade => {
                self.core.events += 1;
                assert!(self.core.links.remove_degrade(id), "degrade {id} in force");
                let detail = match &t.fault {
                    Fault::Degrade { from, to, .. } => format!(
                        "degrade {} -> {} ends",
                        self.core.names_of(from),
                        self.core.names_of(to)
                    ),
                    other => unreachable!("a degrade, not {other:?}"),
                };
                let nodes = t.fault.nodes();
                self.core.log(&t.fault, nodes, detail, true);
            }
            TimedState::Strobe {
                node,
                delta_ns,
                off,
                ..
            } => {
                self.core.events += 1;
                if off {
                    self.step_wall(node, -delta_ns);
                }
                let detail = format!(
                    "{} wall clock strobe ends, {}",
                    self.core.name(node),
                    if off { "stepped back" } else { "back already" }
                );
                self.core.log(&t.fault, vec![node], detail, true);
            }
            TimedState::Pause { node, generation } => {
                let st = &self.core.nodes[node.index()];
                if st.status == Status::Paused && st.pause_generation == generation {
                    self.core.events += 1;
                    self.apply(Fault::Resume { node });
                }
            }
            TimedState::Thaw { node, generation } => {
                let st = &self.core.nodes[node.index()];
                if st.frozen && st.freeze_generation == generation {
                    self.core.events += 1;
                    if st.paused_until == Some(self.core.now) {
                        // The pause ends at this instant too: the resume thaws it.
                        return self.apply(Fault::Resume { node });
                    }
                    // Not a fault of the log (the node's pause goes on, and ends with its
                    // resume there): the trace and the hash have it.
                    self.core.nodes[node.index()].frozen = false;
                    self.core.hash_event(code::THAW, node);
                    self.core.trace_line(TraceKind::Fault, node, |c| {
                        format!("thaw {}'s host; its process stays paused", c.name(node))
                    });
                    self.core.thaw(node);
                }
            }
            TimedState::Crash { node, incarnation } => {
                let st = &self.core.nodes[node.index()];
                if st.status == Status::Down && st.incarnation == incarnation {
                    self.core.events += 1;
                    self.apply(Fault::Restart { node });
                }
            }
            TimedState::Watchdog { node, stall } => {
                let st = &self.core.nodes[node.index()];
                if st.status == Status::Paused && st.stalls == stall {
                    self.core.events += 1;
                    let w = st.watchdog.expect("a watchdog was set");
                    let cause = format!("watchdog: paused {}, ", w.after);
                    self.crash(node, w.restart_after, &cause);
                }
            }
            TimedState::Kill { node, incarnation } => {
                let st = &self.core.nodes[node.index()];
                if st.status != Status::Down && st.incarnation == incarnation {
                    self.core.events += 1;
                    self.crash(node, None, "grace over: ");
                }
            }
            TimedState::Slew { node } => {
                let now = self.core.now;
                if self.core.nodes[node.index()].clocks.end_slew(now) {
                    self.core.events += 1;
                    self.core.rearm(node, true);
                }
            }
        }
    }

    /// Pauses `node`'s process, and with `freeze` its whole host.
    fn pause(&mut self, node: NodeId, duration: Option<Dur>, freeze: bool) {
        let now = self.core.now;
        let name = self.core.name(node).to_string();
        let (fault, verb) = match freeze {
            false => (Fault::Pause { node, duration }, "pause"),
            true => (Fault::Freeze { node, duration }, "freeze"),
        };
        let st = &mut self.core.nodes[node.index()];
        if st.status == Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("{verb} {name}: no effect, it is down"),
            );
            return;
        }
        // A frozen host stays frozen through a pause of its process.
        st.frozen |= freeze;
        if freeze {
            st.freeze_generation = st.freeze_generation.wrapping_add(1);
        }
        let freeze_generation = st.freeze_generation;
        let stalls = st.status == Status::Up;
        // A pause during a pause lasts until the later of the two ends.
        let until = match (st.status, st.paused_until, duration) {
            (Status::Paused, None, _) | (_, _, None) => None,
            (Status::Paused, Some(old), Some(d)) => Some(old.max(now.saturating_add(d))),
            (_, _, Some(d)) => Some(now.saturating_add(d)),
        };
        st.status = Status::Paused;
        st.pause_generation = st.pause_generation.wrapping_add(1);
        st.paused_until = until;
        let generation = st.pause_generation;
        if stalls {
            st.stalls = st.stalls.wrapping_add(1);
        }
        let stall = st.stalls;
        let watchdog = st.watchdog;
        // The thaw goes first: at the instant the pause ends too, the resume finds the host
        // thawed already and says so once.
        if let (true, Some(d)) = (freeze, duration) {
            let generation = freeze_generation;
            let id = self
                .core
                .add_timed(fault.clone(), TimedState::Thaw { node, generation });
            self.core.push(now.saturating_add(d), Action::End { id });
        }
        if let Some(t) = until {
            let id = self
                .core
                .add_timed(fault.clone(), TimedState::Pause { node, generation });
            self.core.push(t, Action::End { id });
        }
        if let Some(w) = watchdog.filter(|_| stalls) {
            let id = self
                .core
                .add_timed(fault.clone(), TimedState::Watchdog { node, stall });
            self.core
                .push(now.saturating_add(w.after), Action::End { id });
        }
        let detail = match duration {
            Some(d) => format!("{verb} {name} for {d}"),
            None => format!("{verb} {name}"),
        };
        self.core.log_fault(&fault, vec![node], detail);
    }

    fn resume(&mut self, node: NodeId) {
        let name = self.core.name(node).to_string();
        let st = &mut self.core.nodes[node.index()];
        if st.status != Status::Paused {
            let fault = Fault::Resume { node };
            self.core.log_fault(
                &fault,
                vec![node],
                format!("resume {name}: no effect, not paused"),
            );
            return;
        }
        st.status = Status::Up;
        st.paused_until = None;
        let thawed = std::mem::take(&mut st.frozen);
        let incarnation = st.incarnation;
        let mut waiting = std::mem::take(&mut st.deferred);
        let detail = match thawed {
            false => format!("resume {name} ({} waiting events)", waiting.len()),
            true => format!("thaw {name} ({} waiting events)", waiting.len()),
        };
        self.core
            .log_fault(&Fault::Resume { node }, vec![node], detail);
        if thawed {
            self.core.thaw(node);
        }
        // The backlog runs now, in the order it came due, before anything else that happens
        // at this instant. A handler of it may crash or pause the node again (a fault on a
        // mark): a crash loses the rest, a pause keeps it waiting, ahead of anything newer.
        while let Some(item) = waiting.pop_front() {
            let st = &mut self.core.nodes[node.index()];
            if st.incarnation != incarnation {
                return;
            }
            if st.status == Status::Paused {
                waiting.push_front(item);
                waiting.append(&mut st.deferred);
                st.deferred = waiting;
                return;
            }
            self.redeliver(node, item);
        }
    }

    /// Crashes `node`; `cause` (`watchdog: `, say) leads the log line when the schedule did
    /// not ask for it.
    fn crash(&mut self, node: NodeId, restart_after: Option<Dur>, cause: &str) {
        let name = self.core.name(node).to_string();
        let fault = Fault::Crash {
            node,
            restart_after,
        };
        if self.core.nodes[node.index()].status == Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("crash {name}: no effect, it is down"),
            );
            return;
        }
        let st = &mut self.core.nodes[node.index()];
        st.status = Status::Down;
        st.incarnation += 1;
        st.deferred.clear();
        st.paused_until = None;
        st.frozen = false;
        for slot in 0..self.core.timers.len() {
            let s = &self.core.timers[slot];
            if s.node == node && s.timer.is_some() {
                self.core.free_timer(slot as u32);
            }
        }
        self.procs[node.index()].on_crash();
        self.poll_roles(node);
        // Its host closes the dead process's connections: each peer that is up hears of it.
        for peer in self.core.disconnect(node) {
            if self.core.nodes[peer.index()].status != Status::Down {
                self.core.send_reset(node, peer);
            }
        }
        if let Some(d) = restart_after {
            let incarnation = self.core.nodes[node.index()].incarnation;
            let id = self
                .core
                .add_timed(fault.clone(), TimedState::Crash { node, incarnation });
            self.core
                .push(self.core.now.saturating_add(d), Action::End { id });
        }
        let detail = match restart_after {
            Some(d) => format!("{cause}crash {name}, restart after {d}"),
            None => format!("{cause}crash {name}"),
        };
        self.core.log_fault(&fault, vec![node], detail);
    }

    fn terminate(&mut self, node: NodeId, grace: Dur) {
        let name = self.core.name(node).to_string();
        let fault = Fault::Terminate { node, grace };
        let st = &self.core.nodes[node.index()];
        if st.status == Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("terminate {name}: no effect, it is down"),
            );
            return;
        }
        let (paused, incarnation) = (st.status == Status::Paused, st.incarnation);
        let id = self
            .core
            .add_timed(fault.clone(), TimedState::Kill { node, incarnation });
        self.core
            .push(self.core.now.saturating_add(grace), Action::End { id });
        let detail = match paused {
            true => format!("terminate {name}, killed after {grace}; paused, it runs no shutdown"),
            false => format!("terminate {name}, killed after {grace}"),
        };
        self.core.log_fault(&fault, vec![node], detail);
        if !paused {
            self.dispatch(node, |p, ctx| p.on_terminate(ctx));
        }
    }

    fn restart(&mut self, node: NodeId) {
        let name = self.core.name(node).to_string();
        let fault = Fault::Restart { node };
        let st = &mut self.core.nodes[node.index()];
        if st.status != Status::Down {
            self.core.log_fault(
                &fault,
                vec![node],
                format!("restart {name}: no effect, it is up"),
            );
            return;
        }
        st.status = Status::Up;
        st.incarnation += 1;
        self.core
            .log_fault(&fault, vec![node], format!("restart {name}"));
        self.dispatch(node, |p, ctx| p.on_restart(ctx));
    }

    /// Heals `healed` (partitions taken out of the table, in the order they were applied) and
    /// releases held messages on links open again.
    fn heal(&mut self, healed: Vec<Timed>) {
        let mut nodes = Vec::new();
        for t in &healed {
            let TimedState::Partition { links, mode } = &t.state else {
                unreachable!("heal() is given partitions");
            };
            self.core.links.block(links, *mode, false);
            nodes.extend(cut_nodes(links));
        }
        nodes.sort();
        nodes.dedup();
        let held = self.core.flush_held();
        let detail = format!(
            "heal {} partition(s), {held} held messages released",
            healed.len()
        );
        self.core.log_fault(&Fault::Heal, nodes, detail);
    }

    fn delay(&mut self, fault: Fault) {
        let Fault::Delay {
            ref from,
            ref to,
            extra,
            duration,
        } = fault
        else {
            unreachable!("delay() is given a delay");
        };
        let links: Vec<(NodeId, NodeId)> = from
            .iter()
            .flat_map(|&a| to.iter().map(move |&b| (a, b)))
            .filter(|(a, b)| a != b)
            .collect();
        for &(a, b) in &links {
            self.core.links.add_extra(a, b, extra, true);
        }
        let detail = format!(
            "delay {} -> {} by {extra}{}",
            self.core.names_of(from),
            self.core.names_of(to),
            duration.map(|d| format!(" for {d}")).unwrap_or_default()
        );
        let nodes = fault.nodes();
        self.core.log_fault(&fault, nodes, detail);
        let id = self
            .core
            .add_timed(fault, TimedState::Delay { links, extra });
        if let Some(d) = duration {
            self.core
                .push(self.core.now.saturating_add(d), Action::End { id });
        }
    }

    fn degrade(&mut self, fault: Fault) {
        let Fault::Degrade {
            ref from,
            ref to,
            loss_ppm,
            duplicate_ppm,
            duration,
        } = fault
        else {
            unreachable!("degrade() is given a degrade");
        };
        let links: Vec<(NodeId, NodeId)> = from
            .iter()
            .flat_map(|&a| to.iter().map(move |&b| (a, b)))
            .filter(|(a, b)| a != b)
            .collect();
        let detail = format!(
            "degrade {} -> {}: loss +{}, duplicate +{}{}",
            self.core.names_of(from),
            self.core.names_of(to),
            percent(loss_ppm),
            percent(duplicate_ppm),
            duration.map(|d| format!(" for {d}")).unwrap_or_default()
        );
        let nodes = fault.nodes();
        self.core.log_fault(&fault, nodes, detail);
        let id = self.core.add_timed(fault, TimedState::Degrade);
        self.core
            .links
            .add_degrade(id, links, loss_ppm, duplicate_ppm);
        if let Some(d) = duration {
            self.core
                .push(self.core.now.saturating_add(d), Action::End { id });
        }
    }

    /// Starts a clock strobe: logs it and takes its first step now.
    fn strobe(&mut self, fault: Fault) {
        let Fault::ClockStrobe {
            node,
            delta_ns,
            period,
            duration,
        } = fault
        else {
            unreachable!("strobe() is given a clock strobe");
        };
        assert!(
            period > Dur::ZERO,
            "a clock strobe needs a positive period (the scenario loader checks it)"
        );
        let detail = format!(
            "{} wall clock strobes {} every {period} for {duration}",
            self.core.name(node),
            signed(delta_ns)
        );
        self.core.log_fault(&fault, vec![node], detail);
        let end = self.core.now.saturating_add(duration);
        let state = TimedState::Strobe {
            node,
            delta_ns,
            period,
            end,
            off: false,
        };
        let id = self.core.add_timed(fault, state);
        if self.core.now < end {
            self.strobe_step(id);
        } else {
            self.core.push(end, Action::End { id });
        }
    }

    /// Takes one step of strobe `id` (away, or back) and schedules the next step, or the end
    /// when the next whole period would not fall before it.
    pub(super) fn strobe_step(&mut self, id: u32) {
        let now = self.core.now;
        let t = self
            .core
            .timed
            .iter_mut()
            .find(|t| t.id == id)
            .expect("a strobe step belongs to a strobe in progress");
        let TimedState::Strobe {
            node,
            delta_ns,
            period,
            end,
            ref mut off,
        } = t.state
        else {
            unreachable!("only a clock strobe steps");
        };
        let delta = if *off { -delta_ns } else { delta_ns };
        *off = !*off;
        let next = now.saturating_add(period);
        self.step_wall(node, delta);
        if next < end {
            self.core.push(next, Action::Step { id });
        } else {
            self.core.push(end, Action::End { id });
        }
    }

    /// One step of a strobe: the wall clock moves and wall timers are re-armed, as for
    /// [`Fault::ClockStep`], whatever the node's status (the clock belongs to the machine).
    fn step_wall(&mut self, node: NodeId, delta_ns: i64) {
        let now = self.core.now;
        self.core.nodes[node.index()].clocks.step(now, delta_ns);
        self.core.rearm(node, true);
        self.core.hash_event(code::STROBE, (node, delta_ns));
        self.core.trace_line(TraceKind::Fault, node, |c| {
            format!(
                "{} wall clock strobe steps {}",
                c.name(node),
                signed(delta_ns)
            )
        });
    }

    fn describe_partition(
        &self,
        cut_off: &[NodeId],
        links: &[(NodeId, NodeId)],
        mode: PartitionMode,
        duration: Option<Dur>,
    ) -> String {
        let mode = match mode {
            PartitionMode::Drop => "drop",
            PartitionMode::Hold => "hold",
        };
        let until = duration.map(|d| format!(" for {d}")).unwrap_or_default();
        let blocked = if links.len() <= 6 {
            let arrows: Vec<String> = links
                .iter()
                .map(|&(a, b)| format!("{}->{}", self.core.name(a), self.core.name(b)))
                .collect();
            arrows.join(" ")
        } else {
            format!("{} links", links.len())
        };
        format!(
            "partition ({mode}){until}: cuts off {}, blocks {blocked}",
            self.core.names_of(cut_off)
        )
    }
}

/// The nodes on the sending or receiving end of any of `links`.
fn cut_nodes(links: &[(NodeId, NodeId)]) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = links.iter().flat_map(|&(a, b)| [a, b]).collect();
    v.sort();
    v.dedup();
    v
}

/// A chance in ppm as a percentage: `20%`, `0.5%`, `0.0001%`.
fn percent(ppm: u32) -> String {
    let (whole, frac) = (ppm / 10_000, ppm % 10_000);
    if frac == 0 {
        format!("{whole}%")
    } else {
        let frac = format!("{frac:04}");
        format!("{whole}.{}%", frac.trim_end_matches('0'))
    }
}

/// `+1.5s` or `-250ms`.
fn signed(delta_ns: i64) -> String {
    let sign = if delta_ns < 0 { '-' } else { '+' };
    format!("{sign}{}", Dur::from_nanos(delta_ns.unsigned_abs()))
}
