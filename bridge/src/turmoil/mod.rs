//! The turmoil runtime: a scenario's nodes as turmoil hosts, its faults as turmoil's calls.
//!
//! [`run`] builds a `turmoil::Sim` seeded with the run's seed, starts the Redis host, the
//! storage host and one host per workload client running the example client, then steps
//! the simulation one tick (1 ms) at a time until the scenario's duration, applying the
//! plan's faults between steps: partitions as `partition`/`repair` (drop) or
//! `hold`/`release` (hold), one-way ones as `partition_oneway`/`repair_oneway`, crashes
//! as `crash`, restarts as `bounce`, delays as a link latency. A fault triggered at a mark
//! is handed to the driver by the client that reaches the mark, which then yields one tick
//! so the fault is in place before its next step. A client's pause at a mark is a sleep
//! there ([`Turmoil`]'s `reach`): turmoil cannot freeze a host. The example client and the
//! hosts are [`crate::client`] and [`crate::hosts`], run over [`Turmoil`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use lockstep_check::{FaultKind, History};
use lockstep_models::Storage;
use lockstep_sim::rng::Rng;
use lockstep_sim::time::Dur;

pub use crate::client::LOCK_KEY;
pub use crate::hosts::{REDIS_PORT, STORAGE_PORT};
pub use crate::marks::Marks;

use crate::plan::{Action, Effect, Plan, Runtime};
use crate::recorder::Recorder;
use crate::sim::Sim;

/// turmoil's step: every host runs this much simulated time per step.
pub const TICK: Duration = Duration::from_millis(1);

fn std_dur(d: Dur) -> Duration {
    Duration::from_nanos(d.as_nanos())
}

/// The turmoil runtime, as the example client and the hosts use it.
#[derive(Clone, Copy, Debug)]
pub struct Turmoil;

impl Sim for Turmoil {
    type Stream = turmoil::net::TcpStream;
    type Listener = turmoil::net::TcpListener;
    type Instant = tokio::time::Instant;

    async fn connect(host: &str, port: u16) -> io::Result<Self::Stream> {
        turmoil::net::TcpStream::connect((host, port)).await
    }

    async fn bind(port: u16) -> io::Result<Self::Listener> {
        turmoil::net::TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)).await
    }

    async fn accept(listener: &Self::Listener) -> io::Result<(Self::Stream, Option<String>)> {
        let (stream, peer) = listener.accept().await?;
        Ok((stream, turmoil::reverse_lookup(peer.ip())))
    }

    fn spawn_local(task: impl Future<Output = ()> + 'static) {
        tokio::task::spawn_local(task);
    }

    async fn sleep(d: Duration) {
        tokio::time::sleep(d).await;
    }

    async fn timeout<F: Future>(d: Duration, f: F) -> Option<F::Output> {
        tokio::time::timeout(d, f).await.ok()
    }

    fn now() -> Self::Instant {
        tokio::time::Instant::now()
    }

    fn host_ms() -> u64 {
        u64::try_from(turmoil::elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A pause placed at the mark is slept here: turmoil cannot freeze a host. Any other
    /// fault placed there goes to the driver, and the client yields one tick so it is in
    /// place first.
    async fn reach(marks: &Marks, node: &str, mark: &str) {
        let mut pause = Duration::ZERO;
        let mut handed = false;
        for fired in marks.hit(node, mark) {
            match fired {
                Ok(p) => pause += std_dur(p.duration),
                Err(effect) => {
                    marks.hand(effect);
                    handed = true;
                }
            }
        }
        if handed {
            tokio::time::sleep(TICK).await;
        }
        if !pause.is_zero() {
            let recorder = marks.recorder();
            let id = recorder.node(node).into_iter().collect::<Vec<_>>();
            let ms = pause.as_millis();
            let at = recorder.now_ns();
            recorder.fault_at(
                at,
                FaultKind::Pause,
                id.clone(),
                format!("pause {node} for {ms} ms (a sleep at {mark})"),
            );
            tokio::time::sleep(pause).await;
            let at = recorder.now_ns();
            recorder.fault_at(at, FaultKind::Resume, id, format!("resume {node}"));
        }
    }
}

/// The example client's Redis connection over turmoil's TCP.
pub type RedisConn = crate::client::RedisConn<Turmoil>;
/// The example Go Redis lock over turmoil's TCP.
pub type RedisLock = crate::client::RedisLock<Turmoil>;
/// The example client's storage connection over turmoil's TCP.
pub type StorageConn = crate::client::StorageConn<Turmoil>;

/// The storage host on a turmoil host ([`crate::hosts::storage_host`]).
pub async fn storage_host(storage: Rc<RefCell<Storage>>, recorder: Recorder) -> turmoil::Result {
    crate::hosts::storage_host::<Turmoil>(storage, recorder).await?;
    Ok(())
}

/// The Redis host on a turmoil host ([`crate::hosts::redis_host`]).
pub async fn redis_host(recorder: Recorder) -> turmoil::Result {
    crate::hosts::redis_host::<Turmoil>(recorder).await?;
    Ok(())
}

/// The workload loop of one client on a turmoil host ([`crate::client::workload`]).
pub async fn workload(
    plan: Rc<Plan>,
    me_name: String,
    recorder: Recorder,
    marks: Marks,
    rng: Rng,
) -> turmoil::Result {
    crate::client::workload::<Turmoil>(plan, me_name, recorder, marks, rng).await;
    Ok(())
}

/// What one run under turmoil produced.
#[derive(Debug)]
pub struct TurmoilRun {
    /// The history, judged by `lockstep_check::check` as any other.
    pub history: History,
    /// Mark triggers that never fired (indices into the seed's plan's `on_mark`, including
    /// the chaos profile's, which are `optional`: the run may end before their mark).
    pub unfired: Vec<usize>,
}

/// Runs `plan` under turmoil with `seed` (turmoil's rng seed, every client's draws and the
/// chaos profile's faults, [`Plan::at_seed`]).
pub fn run(plan: &Plan, seed: u64) -> Result<TurmoilRun, String> {
    if plan.runtime != Runtime::Turmoil {
        return Err(format!(
            "the plan was made for {}, not turmoil",
            plan.runtime.name()
        ));
    }
    let plan = Rc::new(plan.at_seed(seed)?);
    let (lo, hi) = (std_dur(plan.latency.0), std_dur(plan.latency.1));
    let mut sim = turmoil::Builder::new()
        .simulation_duration(std_dur(plan.duration) + Duration::from_secs(3600))
        .tick_duration(TICK)
        .min_message_latency(lo)
        .max_message_latency(hi)
        .rng_seed(seed)
        .build();
    let recorder = Recorder::new(|| {
        turmoil::sim_elapsed().map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    });
    for name in &plan.names {
        recorder.register(name);
    }
    let marks = Marks::new(plan.clone(), recorder.clone());

    let r = recorder.clone();
    sim.host(plan.redis.as_str(), move || redis_host(r.clone()));
    let storage = Rc::new(RefCell::new(Storage::new(plan.storage_mode)));
    let r = recorder.clone();
    sim.host(plan.storage.as_str(), move || {
        storage_host(storage.clone(), r.clone())
    });
    for name in &plan.clients {
        let (p, r, m, n) = (plan.clone(), recorder.clone(), marks.clone(), name.clone());
        let starts = Rc::new(RefCell::new(0u32));
        sim.host(name.as_str(), move || {
            // A restarted client draws from a new stream, as a new process would.
            *starts.borrow_mut() += 1;
            let rng = Rng::fork(seed, &format!("bridge/{n}/{}", starts.borrow()));
            workload(p.clone(), n.clone(), r.clone(), m.clone(), rng)
        });
    }

    // Timed work: (time, order) → actions, with the fault to record when it starts.
    let mut queue: BTreeMap<(u64, usize), (Vec<Action>, Option<Effect>)> = BTreeMap::new();
    let mut order = 0;
    for (at, effect) in &plan.timed {
        queue.insert(
            (at.as_nanos(), order),
            (effect.start.clone(), Some(effect.clone())),
        );
        order += 1;
    }
    let mut cuts: Vec<Action> = Vec::new();
    let end = plan.duration.as_nanos();
    loop {
        let now = u64::try_from(sim.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if now >= end {
            break;
        }
        for effect in marks.take_pending() {
            queue.insert((now, order), (effect.start.clone(), Some(effect)));
            order += 1;
        }
        while let Some(entry) = queue.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (actions, started) = entry.remove();
            if let Some(effect) = &started {
                let nodes = effect
                    .nodes
                    .iter()
                    .filter_map(|n| recorder.node(n))
                    .collect();
                recorder.fault_at(now, effect.kind, nodes, effect.detail.clone());
                if let Some((after, undo)) = &effect.end {
                    queue.insert(
                        (now.saturating_add(after.as_nanos()), order),
                        (undo.clone(), None),
                    );
                    order += 1;
                }
            } else if actions.iter().any(|a| matches!(a, Action::Heal { .. })) {
                recorder.fault_at(now, FaultKind::Heal, Vec::new(), "heal".to_string());
            }
            for action in actions {
                apply(&mut sim, &plan, &action, &mut cuts, &recorder, now)?;
            }
        }
        sim.step().map_err(|e| format!("turmoil: {e}"))?;
    }
    Ok(TurmoilRun {
        history: recorder.history(end, true),
        unfired: marks.unfired(),
    })
}

fn apply(
    sim: &mut turmoil::Sim<'_>,
    plan: &Plan,
    action: &Action,
    cuts: &mut Vec<Action>,
    recorder: &Recorder,
    now: u64,
) -> Result<(), String> {
    match action {
        Action::Cut {
            pairs,
            hold,
            one_way,
        } => {
            for (a, b) in pairs {
                match (hold, one_way) {
                    (true, _) => sim.hold(a.as_str(), b.as_str()),
                    (false, true) => sim.partition_oneway(a.as_str(), b.as_str()),
                    (false, false) => sim.partition(a.as_str(), b.as_str()),
                }
            }
            cuts.push(action.clone());
        }
        Action::Heal {
            pairs,
            hold,
            one_way,
        } => {
            for (a, b) in pairs {
                match (hold, one_way) {
                    (true, _) => sim.release(a.as_str(), b.as_str()),
                    (false, true) => sim.repair_oneway(a.as_str(), b.as_str()),
                    (false, false) => sim.repair(a.as_str(), b.as_str()),
                }
            }
        }
        Action::HealAll => {
            for cut in std::mem::take(cuts) {
                if let Action::Cut {
                    pairs,
                    hold,
                    one_way,
                } = cut
                {
                    apply(
                        sim,
                        plan,
                        &Action::Heal {
                            pairs,
                            hold,
                            one_way,
                        },
                        &mut Vec::new(),
                        recorder,
                        now,
                    )?;
                }
            }
        }
        Action::Crash(n) => sim.crash(n.as_str()),
        Action::Restart(n) => {
            sim.bounce(n.as_str());
            let id = recorder.node(n).into_iter().collect();
            recorder.fault_at(now, FaultKind::Restart, id, format!("restart {n}"));
        }
        Action::Delay { pairs, extra } => {
            let (lo, hi) = (std_dur(plan.latency.0), std_dur(plan.latency.1));
            for (a, b) in pairs {
                match extra {
                    Some(extra) => {
                        sim.set_link_latency(a.as_str(), b.as_str(), hi + std_dur(*extra))
                    }
                    None => {
                        sim.set_link_latency(a.as_str(), b.as_str(), lo);
                        sim.set_link_max_message_latency(a.as_str(), b.as_str(), hi);
                    }
                }
            }
        }
        // A turmoil plan has none (`Plan::of` refuses them); said again here, not skipped.
        Action::Pause(n) | Action::Resume(n) => {
            return Err(format!("pause of {n}: turmoil cannot freeze a host"));
        }
    }
    Ok(())
}
