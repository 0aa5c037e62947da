//! The madsim runtime: a scenario's nodes as madsim nodes, its faults as madsim's calls.
//!
//! [`run`] builds a madsim `Runtime` seeded with the run's seed, its network's latency the
//! scenario's range, and starts inside it one node per host (the Redis host, the storage
//! host, one per workload client running the example client), each with its own IP and a
//! DNS record of its name. The driver, madsim's main task, sleeps to the next timed fault
//! and applies it: partitions as `clog_link` each way of each pair (one way for a one-way
//! partition) and `unclog_link` at the end, crashes as `Handle::kill`, restarts as
//! `Handle::kill` then `Handle::restart`, pauses as `Handle::pause` and `Handle::resume`.
//! A fault placed on a mark is applied by the client that reaches the mark, at once, before
//! its next step; its end goes to the driver. Nothing is stepped: madsim jumps from timer to
//! timer.
//!
//! What madsim's TCP does while a link is clogged (read in madsim 0.2.34's source,
//! `madsim/src/sim/net/mod.rs`): a new connection is refused at once; bytes written on an open
//! connection are held, the receiver re-testing the link after 1 ms, then 2, 4, ... up to
//! 10 s between tries, and delivered in order once it is unclogged. So a clog holds: a
//! `hold` partition is exactly that, and a `drop` partition acts on an open connection as
//! real TCP's retransmission does (its bytes land after the heal, up to one back-off late),
//! on a connection attempt as a loss.
//!
//! madsim has no per-link latency (one `net.send_latency` range for the whole network), so
//! the bridge adds it: every stream is a [`Link`], which sends what its end flushes through
//! madsim at once unless a `delay` fault is on its direction (`from → to`). Then the bytes
//! wait `extra` before madsim sends them (and madsim's latency follows, as the engine adds
//! `extra` to a drawn latency), and whatever the stream sends after them waits behind them,
//! in order, as on one TCP connection. The waiting is done by a task on a node of its own
//! that no fault touches ("net"): bytes in the network outlive their sender's crash or
//! pause, and a stream dropped by its owner still delivers what it had sent, as a closed
//! socket does. madsim has one clock for every node: clock faults are refused by name
//! (`Plan::of` with [`Runtime::Madsim`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ::madsim::net::{NetSim, TcpListener, TcpStream};
use ::madsim::runtime::Handle;
use ::madsim::task::NodeId as MadsimNode;
use ::madsim::time::TimeHandle;
use lockstep_check::{FaultKind, History};
use lockstep_models::Storage;
use lockstep_sim::rng::Rng;
use lockstep_sim::time::Dur;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

pub use crate::client::LOCK_KEY;
pub use crate::hosts::{REDIS_PORT, STORAGE_PORT};
pub use crate::marks::Marks;

use crate::plan::{Action, Effect, Plan, Runtime};
use crate::recorder::Recorder;
use crate::sim::Sim;

fn std_dur(d: Dur) -> Duration {
    Duration::from_nanos(d.as_nanos())
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The madsim runtime, as the example client and the hosts use it.
#[derive(Clone, Copy, Debug)]
pub struct Madsim;

impl Sim for Madsim {
    type Stream = Link;
    type Listener = TcpListener;
    type Instant = std::time::Instant;

    async fn connect(host: &str, port: u16) -> io::Result<Self::Stream> {
        let stream = TcpStream::connect((host, port)).await?;
        Ok(Link::new(stream, Some(host.to_string())))
    }

    async fn bind(port: u16) -> io::Result<Self::Listener> {
        TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)).await
    }

    async fn accept(listener: &Self::Listener) -> io::Result<(Self::Stream, Option<String>)> {
        let (stream, peer) = listener.accept().await?;
        let name = with_run(|run| run.by_ip.get(&peer.ip()).cloned()).flatten();
        Ok((Link::new(stream, name.clone()), name))
    }

    fn spawn_local(task: impl Future<Output = ()> + 'static) {
        ::madsim::task::spawn_local(task);
    }

    async fn sleep(d: Duration) {
        ::madsim::time::sleep(d).await;
    }

    async fn timeout<F: Future>(d: Duration, f: F) -> Option<F::Output> {
        ::madsim::time::timeout(d, f).await.ok()
    }

    fn now() -> Self::Instant {
        TimeHandle::current().now_instant()
    }

    fn host_ms() -> u64 {
        u64::try_from(TimeHandle::current().elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Every fault placed at the mark starts here, before the client's next step: madsim's
    /// calls take effect at once. If one stops or freezes the client itself, the client
    /// yields so that it does.
    async fn reach(marks: &Marks, node: &str, mark: &str) {
        let fired = marks.hit(node, mark);
        if fired.is_empty() {
            return;
        }
        let now = marks.recorder().now_ns();
        let mut touches_me = false;
        for what in fired {
            let effect = match what {
                Err(effect) => effect,
                // A plan for madsim makes every pause an effect; a pause kept for a
                // sleeping client is a freeze of that client here.
                Ok(pause) => Effect {
                    index: usize::MAX,
                    start: vec![Action::Pause(node.to_string())],
                    end: Some((pause.duration, vec![Action::Resume(node.to_string())])),
                    kind: FaultKind::Pause,
                    nodes: vec![node.to_string()],
                    detail: format!(
                        "pause {node} for {} ms",
                        pause.duration.as_nanos() / 1_000_000
                    ),
                },
            };
            touches_me |= effect.start.iter().any(|a| match a {
                Action::Crash(n) | Action::Restart(n) | Action::Pause(n) => n == node,
                _ => false,
            });
            let calls = with_run(|run| {
                run.start(now, &effect);
                std::mem::take(&mut run.calls)
            });
            make(calls.unwrap_or_default());
        }
        with_run(|run| run.wake.notify_one());
        if touches_me {
            ::madsim::task::yield_now().await;
        }
    }
}

/// A madsim TCP stream with the bridge's per-link latency on what this end sends (see the
/// module's documentation): reads are madsim's; a flush goes to madsim at once unless a
/// `delay` is on this direction or earlier bytes still wait, and then waits its turn.
#[derive(Debug)]
pub struct Link {
    stream: Rc<RefCell<TcpStream>>,
    /// `(this node, the peer)`, when both are named hosts of the run.
    route: Option<(String, String)>,
    /// Written, not yet flushed.
    out: Vec<u8>,
    held: Rc<RefCell<Held>>,
}

/// Bytes waiting in the network, in the order they were sent, each with the time madsim
/// gets them.
#[derive(Debug, Default)]
struct Held {
    chunks: VecDeque<(u64, Vec<u8>)>,
    /// A task on the "net" node is sending them.
    pumping: bool,
}

impl Link {
    fn new(stream: TcpStream, peer: Option<String>) -> Link {
        let me = with_run(|run| run.names.get(&::madsim::plugin::node()).cloned()).flatten();
        Link {
            stream: Rc::new(RefCell::new(stream)),
            route: me.zip(peer),
            out: Vec::new(),
            held: Rc::default(),
        }
    }
}

/// Hands `bytes` to madsim's stream and sends them. madsim 0.2.34's `poll_write` appends to
/// a buffer and `poll_flush` sends it, both at once (`madsim/src/sim/net/tcp/stream.rs`);
/// anything else is an error here rather than a hang.
fn send(stream: &RefCell<TcpStream>, bytes: &[u8]) -> io::Result<()> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut stream = stream.borrow_mut();
    match Pin::new(&mut *stream).poll_write(&mut cx, bytes) {
        Poll::Ready(Ok(n)) if n == bytes.len() => {}
        Poll::Ready(Err(e)) => return Err(e),
        _ => return Err(io::Error::other("madsim's TCP did not take a whole write")),
    }
    match Pin::new(&mut *stream).poll_flush(&mut cx) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(io::Error::other("madsim's TCP did not send at once")),
    }
}

/// The body of the "net" node: it starts each sender of delayed bytes the run hands it.
/// No fault names this node, so bytes in the network outlive their sender.
async fn network() {
    let Some(wake) = with_run(|run| run.net_wake.clone()) else {
        return;
    };
    loop {
        for task in with_run(|run| std::mem::take(&mut run.pumps)).unwrap_or_default() {
            ::madsim::task::spawn_local(task);
        }
        wake.notified().await;
    }
}

/// Sends `held`'s bytes on `stream`, each at its time, until none is left.
async fn pump(stream: Rc<RefCell<TcpStream>>, held: Rc<RefCell<Held>>) {
    let time = TimeHandle::current();
    loop {
        let next = held.borrow().chunks.front().map(|(at, _)| *at);
        let Some(at) = next else {
            break;
        };
        let now = nanos(time.elapsed());
        if at > now {
            ::madsim::time::sleep(Duration::from_nanos(at - now)).await;
            continue;
        }
        let chunk = held.borrow_mut().chunks.pop_front();
        if let Some((_, bytes)) = chunk
            && send(&stream, &bytes).is_err()
        {
            // The connection is gone: what waited behind these bytes is lost with it.
            held.borrow_mut().chunks.clear();
        }
    }
    held.borrow_mut().pumping = false;
}

impl AsyncRead for Link {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.stream.borrow_mut()).poll_read(cx, buf)
    }
}

impl AsyncWrite for Link {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().out.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.out.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let bytes = std::mem::take(&mut this.out);
        let extra = this
            .route
            .as_ref()
            .and_then(|route| with_run(|run| run.delays.get(route).copied()))
            .flatten();
        let mut held = this.held.borrow_mut();
        if extra.is_none() && held.chunks.is_empty() {
            drop(held);
            return Poll::Ready(send(&this.stream, &bytes));
        }
        let now = nanos(TimeHandle::current().elapsed());
        let mut at = now.saturating_add(extra.map_or(0, Dur::as_nanos));
        if let Some((last, _)) = held.chunks.back() {
            at = at.max(*last);
        }
        held.chunks.push_back((at, bytes));
        if !held.pumping {
            held.pumping = true;
            let task = Box::pin(pump(this.stream.clone(), this.held.clone()));
            with_run(|run| {
                run.pumps.push(task);
                run.net_wake.notify_one();
            });
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.stream.borrow_mut()).poll_shutdown(cx)
    }
}

/// The example client's Redis connection over madsim's TCP.
pub type RedisConn = crate::client::RedisConn<Madsim>;
/// The example Go Redis lock over madsim's TCP.
pub type RedisLock = crate::client::RedisLock<Madsim>;
/// The example client's storage connection over madsim's TCP.
pub type StorageConn = crate::client::StorageConn<Madsim>;

/// What one run under madsim produced.
#[derive(Debug)]
pub struct MadsimRun {
    /// The history, judged by `lockstep_check::check` as any other.
    pub history: History,
    /// Mark triggers that never fired (indices into the plan's `on_mark`).
    pub unfired: Vec<usize>,
}

thread_local! {
    /// The run on this thread: madsim runs every node on the thread that calls `block_on`,
    /// and asks for node bodies that are `Send`, which the recorder (single-threaded) is
    /// not; they find the run here.
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

/// `f` on the run of this thread, if there is one.
fn with_run<R>(f: impl FnOnce(&mut Run) -> R) -> Option<R> {
    RUN.with(|run| run.borrow_mut().as_mut().map(f))
}

/// A run's state shared by its nodes and its driver.
struct Run {
    plan: Rc<Plan>,
    seed: u64,
    recorder: Recorder,
    marks: Marks,
    storage: Rc<RefCell<Storage>>,
    /// How many times each client started (a restarted client draws from a new stream).
    starts: BTreeMap<String, u32>,
    ids: BTreeMap<String, MadsimNode>,
    names: BTreeMap<MadsimNode, String>,
    by_ip: BTreeMap<IpAddr, String>,
    /// Senders of bytes delayed in the network ([`Link`]), for the "net" node to start.
    pumps: Vec<Pin<Box<dyn Future<Output = ()>>>>,
    /// Wakes the "net" node when `pumps` has work.
    net_wake: Rc<Notify>,
    /// The extra latency of each delayed direction `(from, to)`.
    delays: BTreeMap<(String, String), Dur>,
    /// Cuts in place, for a `heal`.
    cuts: Vec<Action>,
    /// Timed work: (time, order) → actions, with the fault to record when it starts.
    queue: BTreeMap<(u64, usize), (Vec<Action>, Option<Effect>)>,
    order: usize,
    /// Wakes the driver when a mark put an end in `queue`.
    wake: Rc<Notify>,
    /// The first thing that went wrong (a host that could not listen, an action refused).
    error: Option<String>,
    /// Calls on nodes to make once the run is no longer borrowed (a restart starts the
    /// node's body, which reads the run).
    calls: Vec<Call>,
}

/// A call on a madsim node.
#[derive(Clone, Copy, Debug)]
enum Call {
    Kill(MadsimNode),
    Restart(MadsimNode),
    Pause(MadsimNode),
    Resume(MadsimNode),
}

/// Makes `calls`, in order.
fn make(calls: Vec<Call>) {
    let handle = Handle::current();
    for call in calls {
        match call {
            Call::Kill(id) => handle.kill(id),
            Call::Restart(id) => handle.restart(id),
            Call::Pause(id) => handle.pause(id),
            Call::Resume(id) => handle.resume(id),
        }
    }
}

impl Run {
    fn push(&mut self, at: u64, actions: Vec<Action>, started: Option<Effect>) {
        self.queue.insert((at, self.order), (actions, started));
        self.order += 1;
    }

    fn fail(&mut self, problem: String) {
        self.error.get_or_insert(problem);
    }

    /// `effect` starts now: recorded, its end queued, its actions applied.
    fn start(&mut self, now: u64, effect: &Effect) {
        let nodes = effect
            .nodes
            .iter()
            .filter_map(|n| self.recorder.node(n))
            .collect();
        self.recorder
            .fault_at(now, effect.kind, nodes, effect.detail.clone());
        if let Some((after, undo)) = &effect.end {
            self.push(now.saturating_add(after.as_nanos()), undo.clone(), None);
        }
        for action in &effect.start {
            self.apply(action, now);
        }
    }

    fn id(&mut self, name: &str) -> Option<MadsimNode> {
        let id = self.ids.get(name).copied();
        if id.is_none() {
            self.fail(format!("{name}: no such node under madsim"));
        }
        id
    }

    /// `f` on each link of `pairs`: `a → b`, and `b → a` unless `one_way`.
    fn links(
        &mut self,
        pairs: &[(String, String)],
        one_way: bool,
        f: impl Fn(MadsimNode, MadsimNode),
    ) {
        for (a, b) in pairs {
            if let (Some(a), Some(b)) = (self.id(a), self.id(b)) {
                f(a, b);
                if !one_way {
                    f(b, a);
                }
            }
        }
    }

    fn apply(&mut self, action: &Action, now: u64) {
        let net = NetSim::current();
        match action {
            Action::Cut { pairs, one_way, .. } => {
                self.links(pairs, *one_way, |a, b| net.clog_link(a, b));
                self.cuts.push(action.clone());
            }
            Action::Heal { pairs, one_way, .. } => {
                self.links(pairs, *one_way, |a, b| net.unclog_link(a, b));
            }
            Action::HealAll => {
                for cut in std::mem::take(&mut self.cuts) {
                    if let Action::Cut {
                        pairs,
                        hold,
                        one_way,
                    } = cut
                    {
                        let heal = Action::Heal {
                            pairs,
                            hold,
                            one_way,
                        };
                        self.apply(&heal, now);
                    }
                }
                self.cuts.clear();
            }
            Action::Crash(n) => {
                if let Some(id) = self.id(n) {
                    self.calls.push(Call::Kill(id));
                }
            }
            Action::Restart(n) => {
                if let Some(id) = self.id(n) {
                    // `kill` first closes the node's sockets; `restart` alone keeps them
                    // bound, and the new host could not listen again.
                    self.calls.push(Call::Kill(id));
                    self.calls.push(Call::Restart(id));
                    let node = self.recorder.node(n).into_iter().collect();
                    self.recorder
                        .fault_at(now, FaultKind::Restart, node, format!("restart {n}"));
                }
            }
            Action::Pause(n) => {
                if let Some(id) = self.id(n) {
                    self.calls.push(Call::Pause(id));
                }
            }
            Action::Resume(n) => {
                if let Some(id) = self.id(n) {
                    self.calls.push(Call::Resume(id));
                    let node = self.recorder.node(n).into_iter().collect();
                    self.recorder
                        .fault_at(now, FaultKind::Resume, node, format!("resume {n}"));
                }
            }
            Action::Delay { pairs, extra } => {
                for pair in pairs {
                    match extra {
                        Some(extra) => {
                            self.delays.insert(pair.clone(), *extra);
                        }
                        None => {
                            self.delays.remove(pair);
                        }
                    }
                }
            }
        }
    }
}

/// What a node runs.
#[derive(Clone, Copy, Debug)]
enum Body {
    Redis,
    Storage,
    Client,
}

/// The body of node `name`, started (or restarted) now: its future, built from the run.
fn body(name: String, body: Body) -> impl Future<Output = ()> + 'static {
    let state = with_run(|run| {
        let rng = match body {
            Body::Client => {
                let starts = run.starts.entry(name.clone()).or_insert(0);
                *starts += 1;
                Some(Rng::fork(run.seed, &format!("bridge/{name}/{starts}")))
            }
            _ => None,
        };
        (
            run.plan.clone(),
            run.recorder.clone(),
            run.marks.clone(),
            run.storage.clone(),
            rng,
        )
    });
    async move {
        let Some((plan, recorder, marks, storage, rng)) = state else {
            return;
        };
        let served = match (body, rng) {
            (Body::Redis, _) => crate::hosts::redis_host::<Madsim>(recorder).await,
            (Body::Storage, _) => crate::hosts::storage_host::<Madsim>(storage, recorder).await,
            (Body::Client, Some(rng)) => {
                crate::client::workload::<Madsim>(plan, name.clone(), recorder, marks, rng).await;
                Ok(())
            }
            (Body::Client, None) => Ok(()),
        };
        if let Err(e) = served {
            with_run(|run| run.fail(format!("{name}: {e}")));
        }
    }
}

/// Runs `plan` under madsim with `seed` (madsim's seed, every client's draws and the chaos
/// profile's faults, [`Plan::at_seed`]).
pub fn run(plan: &Plan, seed: u64) -> Result<MadsimRun, String> {
    if plan.runtime != Runtime::Madsim {
        return Err(format!(
            "the plan was made for {}, not madsim",
            plan.runtime.name()
        ));
    }
    let plan = Rc::new(plan.at_seed(seed)?);
    let (lo, hi) = (std_dur(plan.latency.0), std_dur(plan.latency.1));
    let mut config = ::madsim::Config::default();
    config.net.packet_loss_rate = 0.0;
    // madsim draws from a half-open range; the scenario's is closed.
    config.net.send_latency = lo..hi + Duration::from_nanos(1);
    let runtime = ::madsim::runtime::Runtime::with_seed_and_config(seed, config);

    let recorder = Recorder::new(|| TimeHandle::try_current().map(|t| nanos(t.elapsed())));
    for name in &plan.names {
        recorder.register(name);
    }
    let marks = Marks::new(plan.clone(), recorder.clone());
    let mut queue = BTreeMap::new();
    for (order, (at, effect)) in plan.timed.iter().enumerate() {
        queue.insert(
            (at.as_nanos(), order),
            (effect.start.clone(), Some(effect.clone())),
        );
    }
    let state = Run {
        plan: plan.clone(),
        seed,
        recorder: recorder.clone(),
        marks: marks.clone(),
        storage: Rc::new(RefCell::new(Storage::new(plan.storage_mode))),
        starts: BTreeMap::new(),
        ids: BTreeMap::new(),
        names: BTreeMap::new(),
        by_ip: BTreeMap::new(),
        pumps: Vec::new(),
        net_wake: Rc::new(Notify::new()),
        delays: BTreeMap::new(),
        cuts: Vec::new(),
        order: queue.len(),
        queue,
        wake: Rc::new(Notify::new()),
        error: None,
        calls: Vec::new(),
    };
    if RUN.with(|run| run.borrow().is_some()) {
        return Err("a madsim run is already going on this thread".to_string());
    }
    RUN.with(|run| *run.borrow_mut() = Some(state));
    let end = plan.duration.as_nanos();
    let driven = runtime.block_on(drive(plan.clone(), end));
    drop(runtime);
    let state = RUN.with(|run| run.borrow_mut().take());
    driven?;
    if let Some(problem) = state.and_then(|s| s.error) {
        return Err(problem);
    }
    Ok(MadsimRun {
        history: recorder.history(end, true),
        unfired: marks.unfired(),
    })
}

/// madsim's main task: the nodes, then the timed faults until the end.
async fn drive(plan: Rc<Plan>, end: u64) -> Result<(), String> {
    let handle = Handle::current();
    let net = NetSim::current();
    for (i, name) in plan.names.iter().enumerate() {
        let kind = if *name == plan.redis {
            Body::Redis
        } else if *name == plan.storage {
            Body::Storage
        } else if plan.clients.contains(name) {
            Body::Client
        } else {
            return Err(format!("{name}: the bridge has no host for it"));
        };
        let (hi, lo) = (i / 250, i % 250 + 1);
        let hi = u8::try_from(hi).map_err(|_| "more nodes than madsim's addresses".to_string())?;
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, hi, lo as u8));
        net.add_dns_record(name, ip);
        let who = name.clone();
        let node = handle
            .create_node()
            .name(name.as_str())
            .ip(ip)
            .init(move || body(who.clone(), kind))
            .build();
        with_run(|run| {
            run.ids.insert(name.clone(), node.id());
            run.names.insert(node.id(), name.clone());
            run.by_ip.insert(ip, name.clone());
        });
    }
    // The network's own node: delayed bytes wait there ([`Link`]). It has no address and no
    // fault names it.
    handle.create_node().name("net").init(network).build();
    let wake = with_run(|run| run.wake.clone()).ok_or("the run is gone")?;
    let time = TimeHandle::current();
    loop {
        let now = nanos(time.elapsed());
        if now >= end {
            break;
        }
        let (next, calls) = with_run(|run| {
            while let Some(entry) = run.queue.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let (actions, started) = entry.remove();
                if let Some(effect) = &started {
                    run.start(now, effect);
                } else {
                    if actions.iter().any(|a| matches!(a, Action::Heal { .. })) {
                        run.recorder
                            .fault_at(now, FaultKind::Heal, Vec::new(), "heal".to_string());
                    }
                    for action in &actions {
                        run.apply(action, now);
                    }
                }
            }
            let next = run.queue.first_key_value().map(|(k, _)| k.0);
            (next, std::mem::take(&mut run.calls))
        })
        .ok_or("the run is gone")?;
        make(calls);
        let until = next.unwrap_or(end).min(end);
        let sleep = ::madsim::time::sleep(Duration::from_nanos(until.saturating_sub(now)));
        tokio::select! {
            biased;
            () = wake.notified() => {}
            () = sleep => {}
        }
    }
    Ok(())
}
