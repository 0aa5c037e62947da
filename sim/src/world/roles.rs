//! Faults aimed at a role (`node = "leader"`), resolved to a node when they come due.
//!
//! A process says which roles it plays by its own state ([`Process::plays`]): a Raft leader,
//! a Redis primary, a client in its critical section. The world asks only while some fault
//! is aimed at a role, and only about a node whose handler just ran or that just crashed,
//! so a run without such faults asks nothing and changes nothing. Each node's claim to a
//! role is dated by the order in which the world saw it begin: when several nodes claim a
//! role at once (a deposed leader that has not heard of the new term, a Redis primary cut
//! off from the sentinels that promoted a replica, a paused client that still believes it
//! holds the lock) the fault hits the newest claimant, the one the rest of the system
//! follows. A node that is down claims nothing. A fault that comes due while nobody plays
//! its role waits until someone does; one still waiting at the end of the run did not fire
//! ([`Unreached::Role`]).

use super::queue::Action;
use super::{NodeId, Process, Status, World};
use crate::fault::{Fault, Unfired, Unreached};
use crate::time::Time;
use crate::trace::TraceKind;

/// The roles that faults are aimed at, who plays them, and those faults.
#[derive(Default)]
pub(super) struct Roles {
    watches: Vec<Watch>,
    aimed: Vec<Aimed>,
    /// Claims begun so far: the date of the next.
    claims: u64,
}

/// One role some fault is aimed at.
struct Watch {
    role: String,
    /// Per node, by id: the date its claim began, while it plays the role.
    since: Vec<Option<u64>>,
    /// Aimed faults that came due while nobody played the role, in that order.
    waiting: Vec<u32>,
}

/// A fault aimed at a role.
struct Aimed {
    /// Its place among the faults scheduled.
    index: usize,
    /// Its role, in `Roles::watches`.
    watch: usize,
    /// The fault, on a placeholder node.
    fault: Fault,
    /// When it came due with nobody in its role, while it waits.
    waiting_since: Option<Time>,
    fired: bool,
}

impl Roles {
    /// Whether no fault is aimed at a role: then nothing is ever asked.
    pub(super) fn is_empty(&self) -> bool {
        self.watches.is_empty()
    }

    /// Enters fault `index`, aimed at `role` in a world of `nodes` nodes; returns its id and
    /// whether its role is new (every node must then be asked about it).
    pub(super) fn add(
        &mut self,
        index: usize,
        role: &str,
        fault: Fault,
        nodes: usize,
    ) -> (u32, bool) {
        let (watch, new) = match self.watches.iter().position(|w| w.role == role) {
            Some(w) => (w, false),
            None => {
                self.watches.push(Watch {
                    role: role.to_string(),
                    since: vec![None; nodes],
                    waiting: Vec::new(),
                });
                (self.watches.len() - 1, true)
            }
        };
        self.aimed.push(Aimed {
            index,
            watch,
            fault,
            waiting_since: None,
            fired: false,
        });
        ((self.aimed.len() - 1) as u32, new)
    }

    /// The aimed faults that did not fire because nobody played their role once they came
    /// due.
    pub(super) fn unfired(&self) -> impl Iterator<Item = Unfired> + '_ {
        self.aimed.iter().filter(|a| !a.fired).filter_map(|a| {
            a.waiting_since.map(|since| Unfired {
                index: a.index,
                why: Unreached::Role {
                    role: self.watches[a.watch].role.clone(),
                    since,
                },
            })
        })
    }

    /// How many faults are aimed (for the memory estimate).
    pub(super) fn len(&self) -> usize {
        self.aimed.len()
    }
}

impl<P: Process> World<P> {
    /// Schedules fault `index`, aimed at `role`, at `time` or (with `time` `None`) to be
    /// fired by a mark's trigger; returns its id.
    pub(super) fn add_aimed(
        &mut self,
        index: usize,
        role: &str,
        fault: Fault,
        time: Option<Time>,
    ) -> u32 {
        let nodes = self.procs.len();
        let (id, new) = self.core.roles.add(index, role, fault, nodes);
        if new {
            // Faults can be scheduled into a running world: its nodes may play the role
            // already.
            for n in 0..nodes {
                self.poll_roles(NodeId(n as u32));
            }
        }
        if let Some(t) = time {
            self.core.push(t.max(self.core.now), Action::Aim { id });
        }
        id
    }

    /// Aimed fault `id` comes due: it hits the newest claimant of its role that is not down,
    /// or waits for one.
    pub(super) fn aim(&mut self, id: u32) {
        let a = &self.core.roles.aimed[id as usize];
        if a.fired {
            return;
        }
        let watch = &self.core.roles.watches[a.watch];
        let nodes = &self.core.nodes;
        let claimant = watch
            .since
            .iter()
            .enumerate()
            .filter(|&(n, _)| nodes[n].status != Status::Down)
            .filter_map(|(n, since)| since.map(|s| (s, n)))
            .max()
            .map(|(_, n)| NodeId(n as u32));
        match claimant {
            Some(node) => {
                let a = &mut self.core.roles.aimed[id as usize];
                a.fired = true;
                a.waiting_since = None;
                let fault = a
                    .fault
                    .aimed_at(node)
                    .expect("only aimable faults are aimed");
                self.core.aiming = Some(watch_role(&self.core.roles, id));
                self.apply(fault);
                self.core.aiming = None;
            }
            None => {
                let now = self.core.now;
                let roles = &mut self.core.roles;
                let a = &mut roles.aimed[id as usize];
                if a.waiting_since.is_none() {
                    a.waiting_since = Some(now);
                }
                let w = a.watch;
                roles.watches[w].waiting.push(id);
                let role = roles.watches[w].role.clone();
                self.core.trace_line(TraceKind::Fault, NodeId(0), |_| {
                    format!("a fault aimed at the {role} waits: no node is the {role}")
                });
            }
        }
    }

    /// Asks `node`, after its handler ran or it crashed, which watched roles it plays now;
    /// a claim that begins fires the faults waiting for its role.
    pub(super) fn poll_roles(&mut self, node: NodeId) {
        if self.core.roles.is_empty() {
            return;
        }
        let down = self.core.nodes[node.index()].status == Status::Down;
        for w in 0..self.core.roles.watches.len() {
            let plays = !down && self.procs[node.index()].plays(&self.core.roles.watches[w].role);
            let roles = &mut self.core.roles;
            let since = roles.watches[w].since[node.index()];
            match (plays, since) {
                (true, None) => {
                    roles.claims += 1;
                    roles.watches[w].since[node.index()] = Some(roles.claims);
                    for id in std::mem::take(&mut roles.watches[w].waiting) {
                        self.aim(id);
                    }
                }
                (false, Some(_)) => roles.watches[w].since[node.index()] = None,
                _ => {}
            }
        }
    }
}

/// The role aimed fault `id` is aimed at.
fn watch_role(roles: &Roles, id: u32) -> String {
    roles.watches[roles.aimed[id as usize].watch].role.clone()
}
