//! A small probe process and helpers shared by the world tests.

use lockstep_sim::{
    ClockKind, Distribution, Dur, EnvOf, Fault, LinkConfig, NodeConfig, NodeId, Process,
    ScheduledFault, Time, TimerId, When, World, WorldConfig,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Msg {
    Note(u32),
    Pong(u32),
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Tick {
    Send,
    SendNow,
    Named(u32),
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Ev {
    Got {
        from: u32,
        msg: Msg,
    },
    Fired {
        tag: u32,
        mono_ns: i64,
        wall_ns: i64,
    },
    Restarted {
        durable: u32,
        volatile: u32,
    },
    Reset {
        peer: u32,
    },
    Terminated,
}

/// A configurable test process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Probe {
    pub(crate) peer: Option<NodeId>,
    pub(crate) send_every: Option<Dur>,
    pub(crate) sends: u32,
    /// Send notes as datagrams rather than on the TCP connection.
    pub(crate) datagram: bool,
    pub(crate) echo: bool,
    /// Before each send: mark `before-send` and send from a zero-length timer, so a fault
    /// triggered by the mark lands between the decision and the send.
    pub(crate) yield_before_send: bool,
    pub(crate) timers: Vec<(ClockKind, Dur, u32)>,
    pub(crate) next: u32,
    pub(crate) durable: u32,
    /// Reach the mark `got-note` on receiving this note.
    pub(crate) mark_on_note: Option<u32>,
    /// What it holds per note received, as [`Process::held_bytes`] counts it.
    pub(crate) held_per_note: u64,
    pub(crate) notes: u64,
}

impl Probe {
    pub(crate) fn sender(peer: u32, every_ms: u64, sends: u32) -> Probe {
        Probe {
            peer: Some(NodeId(peer)),
            send_every: Some(Dur::from_millis(every_ms)),
            sends,
            ..Probe::default()
        }
    }

    pub(crate) fn with_timers(timers: Vec<(ClockKind, Dur, u32)>) -> Probe {
        Probe {
            timers,
            ..Probe::default()
        }
    }

    /// A sender of datagrams.
    pub(crate) fn datagrams(peer: u32, every_ms: u64, sends: u32) -> Probe {
        Probe {
            datagram: true,
            ..Probe::sender(peer, every_ms, sends)
        }
    }

    fn send_note(&mut self, ctx: &mut impl EnvOf<Probe>) {
        let peer = self.peer.expect("a sender has a peer");
        if self.datagram {
            ctx.send_datagram(peer, Msg::Note(self.next));
        } else {
            ctx.send(peer, Msg::Note(self.next));
        }
        self.next += 1;
        self.sends -= 1;
        if self.sends > 0 {
            ctx.set_timer(
                ClockKind::Mono,
                self.send_every.expect("interval"),
                Tick::Send,
            );
        }
    }
}

impl Process for Probe {
    type Msg = Msg;
    type Timer = Tick;
    type Event = Ev;
    type Observation = ();

    fn on_start(&mut self, ctx: &mut impl EnvOf<Probe>) {
        for &(clock, after, tag) in &self.timers {
            ctx.set_timer(clock, after, Tick::Named(tag));
        }
        if let (Some(every), true) = (self.send_every, self.sends > 0) {
            ctx.set_timer(ClockKind::Mono, every, Tick::Send);
        }
    }

    fn on_message(&mut self, ctx: &mut impl EnvOf<Probe>, from: NodeId, msg: Msg) {
        if let (true, Msg::Note(n)) = (self.echo, &msg) {
            ctx.send(from, Msg::Pong(*n));
        }
        let marked = matches!((&msg, self.mark_on_note), (Msg::Note(n), Some(m)) if *n == m);
        self.notes += u64::from(matches!(msg, Msg::Note(_)));
        ctx.record(Ev::Got { from: from.0, msg });
        if marked {
            ctx.mark("got-note");
        }
    }

    fn on_timer(&mut self, ctx: &mut impl EnvOf<Probe>, _id: TimerId, timer: Tick) {
        match timer {
            Tick::Send if self.yield_before_send => {
                ctx.mark("before-send");
                ctx.set_timer(ClockKind::Mono, Dur::ZERO, Tick::SendNow);
            }
            Tick::Send | Tick::SendNow => self.send_note(ctx),
            Tick::Named(tag) => {
                let (mono_ns, wall_ns) = (ctx.mono().as_nanos(), ctx.wall().as_nanos());
                ctx.record(Ev::Fired {
                    tag,
                    mono_ns,
                    wall_ns,
                });
            }
        }
    }

    fn on_crash(&mut self) {
        self.next = 0;
        self.sends = 0;
    }

    fn held_bytes(&self) -> u64 {
        self.notes * self.held_per_note
    }

    fn on_reset(&mut self, ctx: &mut impl EnvOf<Probe>, peer: NodeId) {
        ctx.record(Ev::Reset { peer: peer.0 });
    }

    fn on_terminate(&mut self, ctx: &mut impl EnvOf<Probe>) {
        ctx.record(Ev::Terminated);
    }

    fn on_restart(&mut self, ctx: &mut impl EnvOf<Probe>) {
        ctx.record(Ev::Restarted {
            durable: self.durable,
            volatile: self.next,
        });
        self.durable += 1;
    }
}

/// The configuration of a world of `n` probes named n0, n1, ... with zero latency and
/// perfect clocks booted at zero.
pub(crate) fn config(seed: u64, end_secs: u64, n: usize) -> WorldConfig {
    let nodes = (0..n)
        .map(|i| NodeConfig {
            mono_start: Some(lockstep_sim::LocalTime::from_nanos(0)),
            ..NodeConfig::named(format!("n{i}"))
        })
        .collect();
    WorldConfig::new(seed, Time::from_millis(end_secs * 1000), nodes)
}

pub(crate) fn world_with(config: WorldConfig, probes: Vec<Probe>) -> World<Probe> {
    World::new(config, probes)
}

pub(crate) fn at_ms(ms: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(When::At(Time::from_millis(ms)), fault)
}

pub(crate) fn latency(d: Distribution) -> LinkConfig {
    LinkConfig {
        latency: d,
        ..LinkConfig::default()
    }
}

pub(crate) fn const_ms(ms: u64) -> Distribution {
    Distribution::Constant(Dur::from_millis(ms))
}

/// (true time in ms, event) of every history record of `node`.
pub(crate) fn records(w: &World<Probe>, node: u32) -> Vec<(u64, Ev)> {
    w.history()
        .iter()
        .filter(|r| r.node == NodeId(node))
        .map(|r| (r.time.as_nanos() / 1_000_000, r.event.clone()))
        .collect()
}

/// True times (ns) at which `node` fired its named timers, by tag.
pub(crate) fn fired_at_ns(w: &World<Probe>, node: u32, tag: u32) -> Vec<u64> {
    w.history()
        .iter()
        .filter(|r| r.node == NodeId(node))
        .filter(|r| matches!(r.event, Ev::Fired { tag: t, .. } if t == tag))
        .map(|r| r.time.as_nanos())
        .collect()
}

/// The notes `node` received, in order.
pub(crate) fn notes(w: &World<Probe>, node: u32) -> Vec<u32> {
    w.history()
        .iter()
        .filter(|r| r.node == NodeId(node))
        .filter_map(|r| match r.event {
            Ev::Got {
                msg: Msg::Note(n), ..
            } => Some(n),
            _ => None,
        })
        .collect()
}
