//! A scenario as a bridge run sees it: the nodes, the example client's settings, and the
//! fault schedule as runtime-neutral actions at times or at marks.
//!
//! The scenario is loaded by the `lockstep` crate's loader (every check of `lockstep run`);
//! the plan is made for one [`Runtime`] and refuses, with an error naming the fault or key
//! in that runtime's terms, whatever the bridge's hosts or that runtime cannot express.
//! Nothing is skipped silently.

use std::fmt;
use std::path::Path;

use lockstep::Scenario;
use lockstep::chaos::Chaos;
use lockstep_check::FaultKind;
use lockstep_models::family::{Role, Tokens};
use lockstep_models::{StorageMode, WorkloadConfig, WorkloadKind};
use lockstep_sim::dist::Distribution;
use lockstep_sim::fault::{Fault, ScheduledFault, When};
use lockstep_sim::net::{PartitionMode, Shape};
use lockstep_sim::rng::Rng;
use lockstep_sim::time::Dur;

/// Why a scenario cannot run under the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    /// The scenario file.
    pub file: String,
    /// What cannot be expressed, in the user's words (the key path or the fault).
    pub problem: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.problem)
    }
}

impl std::error::Error for PlanError {}

/// The runtime a plan is made for: what it can express differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// turmoil (`--features turmoil`): no pause of a host, no per-host clock.
    Turmoil,
    /// madsim (`--features madsim`, `--cfg madsim`): pauses any node, per-link latency added
    /// by the bridge, no per-host clock.
    Madsim,
}

impl Runtime {
    /// Its name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Turmoil => "turmoil",
            Runtime::Madsim => "madsim",
        }
    }
}

/// One thing the runtime is asked to do. Nodes are named as in the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Cut (`hold`: hold) the links between every pair, both ways unless `one_way`.
    Cut {
        /// `(a, b)` pairs (senders first when `one_way`).
        pairs: Vec<(String, String)>,
        /// Messages wait and are delivered after the heal (TCP-like) instead of being lost.
        hold: bool,
        /// Only `a → b` is blocked.
        one_way: bool,
    },
    /// Undo a [`Action::Cut`] with the same fields.
    Heal {
        /// As the cut's.
        pairs: Vec<(String, String)>,
        /// As the cut's.
        hold: bool,
        /// As the cut's.
        one_way: bool,
    },
    /// Every cut so far healed (a `heal` fault).
    HealAll,
    /// The host crashes (its state and connections are lost).
    Crash(String),
    /// The host starts again.
    Restart(String),
    /// The host is frozen: none of its tasks runs (madsim only).
    Pause(String),
    /// The host runs again (madsim only).
    Resume(String),
    /// Links between the pairs get `extra` more latency (`Some`), or the scenario's latency
    /// again (`None`): under turmoil a fixed latency of `extra` plus the scenario's highest,
    /// under madsim `extra` before madsim's own latency for what is sent meanwhile.
    Delay {
        /// `(from, to)` pairs.
        pairs: Vec<(String, String)>,
        /// The extra latency, or `None` to restore.
        extra: Option<Dur>,
    },
}

/// A fault's effect: actions now, and maybe actions after a while.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The fault's index in the schedule.
    pub index: usize,
    /// What is done when it fires.
    pub start: Vec<Action>,
    /// What is done `after` it fired, if it ends.
    pub end: Option<(Dur, Vec<Action>)>,
    /// How the history records it.
    pub kind: FaultKind,
    /// The nodes it affects.
    pub nodes: Vec<String>,
    /// Its description in the history.
    pub detail: String,
}

/// A pause of a client at a mark: the client sleeps there (cooperative: a runtime without
/// a way to freeze a host cannot do more).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkPause {
    /// How long.
    pub duration: Dur,
}

/// A fault triggered when a node reaches a mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnMark {
    /// The node.
    pub node: String,
    /// The mark (`granted`, `read-done`, `work-done`, `validity-checked`).
    pub mark: String,
    /// Which time it reaches it (from 1).
    pub occurrence: u32,
    /// The trigger lapses if the mark is reached after this time.
    pub before: Option<Dur>,
    /// A pause of the node itself, or the fault's actions.
    pub what: Result<MarkPause, Effect>,
    /// Drawn by the chaos profile: it may not fire (the run ended first, or the mark is
    /// not reached), as a native run's chaos triggers may not.
    pub optional: bool,
}

/// The Redis lock client's settings, from the scenario's `[model]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisSettings {
    /// `ttl_ms`.
    pub ttl: Dur,
    /// `fencing = "incr"`: a token from `INCR` after each acquisition.
    pub fencing: bool,
    /// `release = "del"`: the naive release.
    pub release_del: bool,
    /// `request_timeout_ms`.
    pub request_timeout: Dur,
    /// `retry_delay_ms`.
    pub retry_delay: Distribution,
    /// `drift_factor`, in ppm.
    pub drift_ppm: u64,
}

/// A scenario as the bridge runs it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The runtime it is made for.
    pub runtime: Runtime,
    /// The scenario's name.
    pub name: String,
    /// How long a run lasts.
    pub duration: Dur,
    /// Every node's name, by node id (the history's names).
    pub names: Vec<String>,
    /// The Redis server's name.
    pub redis: String,
    /// The storage's name.
    pub storage: String,
    /// The workload clients' names.
    pub clients: Vec<String>,
    /// What the clients run.
    pub workload: WorkloadConfig,
    /// The lock client's settings.
    pub lock: RedisSettings,
    /// The storage's fencing mode.
    pub storage_mode: StorageMode,
    /// One-way latency of every link, lowest and highest.
    pub latency: (Dur, Dur),
    /// Faults at times.
    pub timed: Vec<(Dur, Effect)>,
    /// Faults at marks.
    pub on_mark: Vec<OnMark>,
    /// The scenario's chaos profile, drawn per seed by [`Plan::at_seed`].
    pub chaos: Option<Chaos>,
    /// The `[[fault]]` entries, so the chaos faults of a seed are numbered after them.
    pub file_faults: usize,
}

const MODEL_KEYS: [&str; 8] = [
    "kind",
    "ttl_ms",
    "release",
    "fencing",
    "request_timeout_ms",
    "retry_delay_ms",
    "drift_factor",
    "expiry_clock",
];

fn ms(n: i64) -> Dur {
    Dur::from_millis(n.unsigned_abs())
}

impl Plan {
    /// Loads `path` with lockstep's loader and plans its run under `runtime`.
    pub fn load(path: &Path, runtime: Runtime) -> Result<(Scenario, Plan), PlanError> {
        let file = path.display().to_string();
        let fail = |problem: String| PlanError {
            file: file.clone(),
            problem,
        };
        let loaded = lockstep::load(path).map_err(|e| fail(e.to_string()))?;
        let text = lockstep::files::read_text(path, lockstep::files::Input::SCENARIO)
            .map_err(|e| fail(e.to_string()))?;
        let table: toml::Table = text.parse().map_err(|e| fail(format!("{e}")))?;
        let plan = Plan::of(&loaded.scenario, &table, runtime).map_err(fail)?;
        Ok((loaded.scenario, plan))
    }

    /// Plans `scenario` under `runtime`, whose file's TOML is `table` (for the Redis and
    /// storage keys the loaded system keeps inside its family).
    pub fn of(scenario: &Scenario, table: &toml::Table, runtime: Runtime) -> Result<Plan, String> {
        let system = &scenario.system;
        if system.kind() != "redis" {
            return Err(format!(
                "model.kind: the bridge's hosts serve the Redis lock only, not `{}`",
                system.kind()
            ));
        }
        let model = table.get("model").and_then(|m| m.as_table());
        let key = |k: &str| model.and_then(|m| m.get(k));
        if let Some(m) = model {
            for k in m.keys() {
                if !MODEL_KEYS.contains(&k.as_str()) {
                    return Err(format!(
                        "model.{k}: not supported by the bridge's Redis host (it serves one \
                         in-memory server; supported: {})",
                        MODEL_KEYS.join(", ")
                    ));
                }
            }
        }
        let fencing = match key("fencing").and_then(|v| v.as_str()).unwrap_or("none") {
            "none" => false,
            "incr" => true,
            other => {
                return Err(format!(
                    "model.fencing: `{other}` is not supported by the example client (none, incr)"
                ));
            }
        };
        if fencing != matches!(system.tokens(), Tokens::Ordered { .. }) {
            return Err("model.fencing: the loaded system disagrees with the file".to_string());
        }
        let release_del = key("release").and_then(|v| v.as_str()) == Some("del");
        let int = |k: &str, d: i64| key(k).and_then(|v| v.as_integer()).unwrap_or(d);
        let retry_delay = match key("retry_delay_ms") {
            None => Distribution::Uniform {
                lo: ms(50),
                hi: ms(250),
            },
            Some(v) => match (v.as_integer(), v.get("uniform").and_then(|u| u.as_array())) {
                (Some(n), _) => Distribution::Constant(ms(n)),
                (None, Some(a)) if a.len() == 2 => Distribution::Uniform {
                    lo: ms(a[0].as_integer().unwrap_or(0)),
                    hi: ms(a[1].as_integer().unwrap_or(0)),
                },
                _ => {
                    return Err(
                        "model.retry_delay_ms: only a number or { uniform = [lo, hi] }".into(),
                    );
                }
            },
        };
        let drift = key("drift_factor")
            .and_then(|v| v.as_float())
            .unwrap_or(0.01);
        let lock = RedisSettings {
            ttl: system.ttl(),
            fencing,
            release_del,
            request_timeout: ms(int("request_timeout_ms", 500)),
            retry_delay,
            drift_ppm: (drift * 1e6).round() as u64,
        };
        let mode = table
            .get("storage")
            .and_then(|s| s.get("mode"))
            .and_then(|m| m.as_str())
            .unwrap_or("unfenced");
        let storage_mode = StorageMode::ALL
            .iter()
            .find(|(n, _)| *n == mode)
            .map(|(_, m)| *m)
            .ok_or_else(|| format!("storage.mode: `{mode}` has no storage host"))?;

        let layout = system.layout();
        let names: Vec<String> = layout.nodes.iter().map(|(n, _)| n.clone()).collect();
        let of_role = |want: fn(&Role) -> bool| -> Vec<String> {
            layout
                .nodes
                .iter()
                .filter(|(_, r)| want(r))
                .map(|(n, _)| n.clone())
                .collect()
        };
        let servers = of_role(|r| matches!(r, Role::Server));
        let storages = of_role(|r| matches!(r, Role::Storage));
        let coordinators = of_role(|r| matches!(r, Role::Coordinator { .. }));
        if servers.len() != 1 || storages.len() != 1 || !coordinators.is_empty() {
            return Err(
                "model: the bridge runs one Redis server and one storage, no replicas or \
                 sentinels"
                    .to_string(),
            );
        }
        let clients = of_role(|r| matches!(r, Role::Client));

        let latency = match scenario.link.latency {
            Distribution::Constant(d) => (d, d),
            Distribution::Uniform { lo, hi } => (lo, hi),
            _ => {
                return Err(match runtime {
                    Runtime::Turmoil => {
                        "network.latency_ms: turmoil draws latencies in a range of its own; \
                         only a constant or { uniform = [lo, hi] } can be given to it"
                    }
                    Runtime::Madsim => {
                        "network.latency_ms: madsim draws latencies uniformly in one range \
                         (net.send_latency); only a constant or { uniform = [lo, hi] } can be \
                         given to it"
                    }
                }
                .to_string());
            }
        };
        if scenario.link.loss_ppm != 0 || scenario.link.duplicate_ppm != 0 {
            return Err(format!("network: {}", no_loss(runtime)));
        }
        if !scenario.links.is_empty() {
            return Err("network.links: per-link settings are not translated yet".into());
        }
        for node in &scenario.clocks {
            if node.drift_ppm != 0 || node.wall_offset_ns != 0 {
                return Err(format!(
                    "clocks: {} has a drift or an offset; {}",
                    node.name,
                    no_clock(runtime)
                ));
            }
        }
        if scenario.clocks.iter().any(|n| n.watchdog.is_some()) {
            return Err(
                "workload.watchdog: the supervisor that kills a stalled client is lockstep's \
                 own; the bridge does not translate it yet"
                    .into(),
            );
        }
        if let Some(chaos) = &scenario.chaos {
            expressible(chaos, runtime)?;
        }

        let mut plan = Plan {
            runtime,
            name: scenario.name.clone(),
            duration: scenario.duration,
            names,
            redis: servers[0].clone(),
            storage: storages[0].clone(),
            clients,
            workload: system.workload().clone(),
            lock,
            storage_mode,
            latency,
            timed: Vec::new(),
            on_mark: Vec::new(),
            chaos: scenario.chaos.clone(),
            file_faults: scenario.faults.len(),
        };
        if !matches!(plan.workload.kind, WorkloadKind::Counter(_)) {
            return Err("workload.kind: the example client runs the counter workload".into());
        }
        for (index, sf) in scenario.faults.iter().enumerate() {
            let at = format!("fault[{}]", scenario.origin[index]);
            plan.add(index, &at, sf, None)?;
        }
        Ok(plan)
    }

    /// The plan of the run with `seed`: the file's faults and what the chaos profile draws
    /// for that seed (`Chaos::generate`, the draw of a native run with the same seed),
    /// numbered after the file's. A random partition shape (majority/minority, bridge,
    /// ring) is resolved from the stream `"bridge/chaos-shapes"` of the seed, as the world
    /// resolves it from its own fault stream when it applies one. Without a profile, the
    /// plan itself.
    pub fn at_seed(&self, seed: u64) -> Result<Plan, String> {
        let mut plan = self.clone();
        let Some(chaos) = &self.chaos else {
            return Ok(plan);
        };
        let mut rng = Rng::fork(seed, "bridge/chaos-shapes");
        for (i, sf) in chaos.generate(seed).iter().enumerate() {
            plan.add(
                self.file_faults + i,
                &format!("chaos[{i}]"),
                sf,
                Some(&mut rng),
            )
            .map_err(|e| format!("chaos (seed {seed}): {e}"))?;
        }
        Ok(plan)
    }

    fn name(&self, node: lockstep_sim::NodeId) -> String {
        self.names[node.0 as usize].clone()
    }

    /// Plans fault `index` of the schedule, `at` in errors (`fault[2]`, `chaos[0]`); `rng` (a
    /// chaos fault's) resolves a random partition shape.
    fn add(
        &mut self,
        index: usize,
        at: &str,
        sf: &ScheduledFault,
        rng: Option<&mut Rng>,
    ) -> Result<(), String> {
        let optional = rng.is_some();
        let no = |why: &str| Err(format!("{at}: {why}"));
        if let Some(role) = &sf.role {
            return no(&format!(
                "aimed at the {role}: the bridge's hosts do not say who plays a role; name \
                 the node"
            ));
        }
        let pairs = |from: &[lockstep_sim::NodeId], to: &[lockstep_sim::NodeId]| {
            let mut v = Vec::new();
            for a in from {
                for b in to {
                    v.push((self.name(*a), self.name(*b)));
                }
            }
            v
        };
        // Under turmoil, a client's pause at one of its marks: the client sleeps there.
        // (madsim freezes the node instead: a pause is an effect as any other, below.)
        if let (
            When::OnMark {
                node,
                mark,
                occurrence,
                before,
            },
            Fault::Pause {
                node: paused,
                duration,
            },
            Runtime::Turmoil,
        ) = (&sf.when, &sf.fault, self.runtime)
        {
            let Some(duration) = duration else {
                return no("a pause without `for_ms` has no end a sleeping client can keep");
            };
            if node != paused || !self.clients.contains(&self.name(*paused)) {
                return no(&format!(
                    "pause of {}: turmoil cannot freeze a host; only a workload client can \
                     pause, at its own mark (it sleeps there)",
                    self.name(*paused)
                ));
            }
            self.on_mark.push(OnMark {
                node: self.name(*node),
                mark: mark.clone(),
                occurrence: *occurrence,
                before: before.map(|t| Dur::from_nanos(t.as_nanos())),
                what: Ok(MarkPause {
                    duration: *duration,
                }),
                optional,
            });
            return Ok(());
        }
        let madsim = self.runtime == Runtime::Madsim;
        let effect = match &sf.fault {
            Fault::Pause { node, .. } if !madsim => {
                return no(&format!(
                    "pause of {} at a time: turmoil cannot freeze a host; a client's pause \
                     must be placed on one of its marks",
                    self.name(*node)
                ));
            }
            Fault::Resume { .. } if !madsim => {
                return no("resume: turmoil cannot freeze or thaw a host");
            }
            // madsim freezes a node (`Handle::pause`) and thaws it (`Handle::resume`).
            Fault::Pause { node, duration } => {
                let n = self.name(*node);
                Effect {
                    index,
                    start: vec![Action::Pause(n.clone())],
                    end: duration.map(|d| (d, vec![Action::Resume(n.clone())])),
                    kind: FaultKind::Pause,
                    nodes: vec![n.clone()],
                    detail: match duration {
                        Some(d) => format!("pause {n} for {} ms", d.as_nanos() / 1_000_000),
                        None => format!("pause {n}"),
                    },
                }
            }
            Fault::Resume { node } => {
                let n = self.name(*node);
                Effect {
                    index,
                    start: vec![Action::Resume(n.clone())],
                    end: None,
                    kind: FaultKind::Resume,
                    nodes: vec![n.clone()],
                    detail: format!("resume {n}"),
                }
            }
            Fault::ClockStep { node, .. }
            | Fault::ClockSlew { node, .. }
            | Fault::ClockDrift { node, .. }
            | Fault::ClockStrobe { node, .. } => {
                return no(&format!(
                    "clock fault on {}: {}",
                    self.name(*node),
                    no_clock(self.runtime)
                ));
            }
            Fault::Degrade { .. } => {
                return no(&format!("degrade: {}", no_loss(self.runtime)));
            }
            Fault::Freeze { node, .. } => {
                return no(&format!(
                    "freeze of {}: the runtime can stop a process but not its host's network                      stack; use pause",
                    self.name(*node)
                ));
            }
            Fault::Terminate { node, .. } => {
                return no(&format!(
                    "terminate {}: a user's client has no SIGTERM handler the bridge can call; \
                     use crash",
                    self.name(*node)
                ));
            }
            Fault::Crash {
                node,
                restart_after,
            } => {
                let n = self.name(*node);
                Effect {
                    index,
                    start: vec![Action::Crash(n.clone())],
                    end: restart_after.map(|d| (d, vec![Action::Restart(n.clone())])),
                    kind: FaultKind::Crash,
                    nodes: vec![n.clone()],
                    detail: format!("crash {n}"),
                }
            }
            Fault::Restart { node } => {
                let n = self.name(*node);
                Effect {
                    index,
                    start: vec![Action::Restart(n.clone())],
                    end: None,
                    kind: FaultKind::Restart,
                    nodes: vec![n.clone()],
                    detail: format!("restart {n}"),
                }
            }
            Fault::Heal => Effect {
                index,
                start: vec![Action::HealAll],
                end: None,
                kind: FaultKind::Heal,
                nodes: Vec::new(),
                detail: "heal".to_string(),
            },
            Fault::Partition {
                shape,
                mode,
                duration,
            } => {
                let hold = *mode == PartitionMode::Hold;
                let (pairs, one_way) = match shape {
                    Shape::Isolate { node } => {
                        let others: Vec<_> = (0..self.names.len())
                            .map(|i| lockstep_sim::NodeId(i as u32))
                            .filter(|n| n != node)
                            .collect();
                        (pairs(&[*node], &others), false)
                    }
                    Shape::Split { groups } => {
                        let mut v = Vec::new();
                        for (i, a) in groups.iter().enumerate() {
                            for b in &groups[i + 1..] {
                                v.extend(pairs(a, b));
                            }
                        }
                        (v, false)
                    }
                    Shape::OneWay { from, to } => {
                        if hold && !madsim {
                            return no("a one-way partition in hold mode: turmoil holds both ways");
                        }
                        (pairs(from, to), true)
                    }
                    random => {
                        let Some(rng) = rng else {
                            return no(
                                "this partition shape is drawn at random by the world; give \
                                 the groups",
                            );
                        };
                        if hold && self.runtime == Runtime::Turmoil {
                            // Refused before any run (chaos.hold); kept as a backstop.
                            return no("a random partition in hold mode: turmoil holds both ways");
                        }
                        let links = random.resolve(self.names.len(), rng).links;
                        (pairs_of(&links, |a, b| (self.name(a), self.name(b))), true)
                    }
                };
                let mut nodes: Vec<String> = pairs
                    .iter()
                    .flat_map(|(a, b)| [a.clone(), b.clone()])
                    .collect();
                nodes.sort();
                nodes.dedup();
                Effect {
                    index,
                    start: vec![Action::Cut {
                        pairs: pairs.clone(),
                        hold,
                        one_way,
                    }],
                    end: duration.map(|d| {
                        (
                            d,
                            vec![Action::Heal {
                                pairs: pairs.clone(),
                                hold,
                                one_way,
                            }],
                        )
                    }),
                    kind: FaultKind::Partition,
                    nodes: nodes.clone(),
                    detail: format!(
                        "partition {} ({})",
                        nodes.join(", "),
                        if hold { "hold" } else { "drop" }
                    ),
                }
            }
            Fault::Delay {
                from,
                to,
                extra,
                duration,
            } => {
                let pairs = pairs(from, to);
                Effect {
                    index,
                    start: vec![Action::Delay {
                        pairs: pairs.clone(),
                        extra: Some(*extra),
                    }],
                    end: Some((
                        duration.unwrap_or(Dur::from_nanos(u64::MAX / 4)),
                        vec![Action::Delay { pairs, extra: None }],
                    )),
                    kind: FaultKind::Network,
                    nodes: Vec::new(),
                    detail: format!("delay +{} ms", extra.as_nanos() / 1_000_000),
                }
            }
        };
        match &sf.when {
            When::At(t) => self.timed.push((Dur::from_nanos(t.as_nanos()), effect)),
            When::OnMark {
                node,
                mark,
                occurrence,
                before,
            } => self.on_mark.push(OnMark {
                node: self.name(*node),
                mark: mark.clone(),
                occurrence: *occurrence,
                before: before.map(|t| Dur::from_nanos(t.as_nanos())),
                what: Err(effect),
                optional,
            }),
        }
        Ok(())
    }
}

fn pairs_of(
    links: &[(lockstep_sim::NodeId, lockstep_sim::NodeId)],
    name: impl Fn(lockstep_sim::NodeId, lockstep_sim::NodeId) -> (String, String),
) -> Vec<(String, String)> {
    links.iter().map(|&(a, b)| name(a, b)).collect()
}

/// Refuses, before any run, a chaos profile that can draw a fault `runtime` cannot express,
/// naming the key that turns it off.
fn expressible(chaos: &Chaos, runtime: Runtime) -> Result<(), String> {
    let w = &chaos.weights;
    let turmoil = runtime == Runtime::Turmoil;
    if w.clock > 0 {
        return Err(format!(
            "chaos.weights.clock: the profile steps, slews and drifts clocks; {} (set it to 0)",
            no_clock(runtime)
        ));
    }
    if w.network > 0 {
        return Err(format!(
            "chaos.weights.network: the profile's slow links are delayed or lossy; {} (set it \
             to 0)",
            if turmoil {
                "loss and duplication on TCP cannot be expressed in turmoil"
            } else {
                "madsim's TCP never loses or duplicates"
            }
        ));
    }
    if turmoil && w.pause > 0 && chaos.on_mark_ppm < 1_000_000 {
        return Err(
            "chaos.weights.pause: the profile pauses processes at random times; turmoil cannot \
             freeze a host, only a client can sleep at its own mark (set it to 0, or \
             chaos.on_mark = 1 so that every fault waits for a client's mark)"
                .into(),
        );
    }
    if w.pause > 0 && chaos.freeze_ppm > 0 {
        return Err(
            "chaos.freeze: the profile freezes whole hosts for some of its pauses; the runtime \
             can stop a process but not its host's network stack (set it to 0: pauses then stop \
             processes only)"
                .into(),
        );
    }
    if turmoil && w.partition > 0 && chaos.hold_ppm > 0 {
        return Err(
            "chaos.hold: the profile holds some partitions one way; turmoil holds a link both \
             ways (set it to 0: partitions then drop)"
                .into(),
        );
    }
    Ok(())
}

fn no_clock(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Turmoil => "turmoil has no per-host clock",
        Runtime::Madsim => "madsim has one clock for every node, no per-host clock",
    }
}

fn no_loss(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Turmoil => "loss and duplication on TCP cannot be expressed in turmoil",
        Runtime::Madsim => {
            "loss and duplication on TCP cannot be expressed in madsim (its TCP resends a lost \
             packet until the link takes it, and never duplicates)"
        }
    }
}
