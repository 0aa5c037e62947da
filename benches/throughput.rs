//! Throughput benchmarks (`cargo bench`): simulated events per second of the raw engine on a
//! ping-pong, against a bare `BinaryHeap` loop of the same ping-pong (the ratio), of the K1
//! catalogue scenario over 10,000 seeds, and seeds per CPU-second and CPU ns per event on one
//! core of each lock family's chaos scenario through `lockstep sweep`'s library half. Figures, not
//! assertions: targets are checked by reading them (ARCHITECTURE.md, "Testing").
#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures the host's time; it is outside every run"
)]

use std::hint::black_box;
use std::time::Instant;

use lockstep_sim::{
    Distribution, Dur, EnvOf, LinkConfig, LocalTime, NodeConfig, NodeId, Process, Time, TimerId,
    World, WorldConfig,
};

/// Two nodes bounce one message forever.
#[derive(Debug)]
struct Pong {
    peer: NodeId,
    serve: bool,
}

impl Process for Pong {
    type Msg = u64;
    type Timer = ();
    type Event = ();
    type Observation = ();

    fn on_start(&mut self, ctx: &mut impl EnvOf<Pong>) {
        if self.serve {
            ctx.send(self.peer, 0);
        }
    }
    fn on_message(&mut self, ctx: &mut impl EnvOf<Pong>, _from: NodeId, msg: u64) {
        ctx.send(self.peer, msg + 1);
    }
    fn on_timer(&mut self, _ctx: &mut impl EnvOf<Pong>, _id: TimerId, _t: ()) {}
    fn on_crash(&mut self) {}
    fn on_restart(&mut self, _ctx: &mut impl EnvOf<Pong>) {}
}

fn ping_pong(events: u64, latency: Distribution) -> (u64, f64) {
    let nodes = vec![node("a"), node("b")];
    let mut cfg = WorldConfig::new(1, Time::MAX, nodes);
    cfg.max_events = events;
    cfg.link = LinkConfig {
        latency,
        ..LinkConfig::default()
    };
    let procs = vec![
        Pong {
            peer: NodeId(1),
            serve: true,
        },
        Pong {
            peer: NodeId(0),
            serve: false,
        },
    ];
    let mut world = World::new(cfg, procs);
    let start = Instant::now();
    black_box(world.run());
    (world.events(), start.elapsed().as_secs_f64())
}

/// The same ping-pong as a bare hand-written loop: a `BinaryHeap` of (time, sequence,
/// message) and nothing else (no clocks, no network model, no trace, no history). The engine's
/// cost per event over this one's is the figure to watch: a ratio, steady on a noisy machine
/// where absolute times are not. The latency is drawn from the same kind of stream
/// (`lockstep_sim::Rng`), one draw per message as the engine's uniform link.
fn bare_ping_pong(events: u64, latency: Distribution) -> (u64, f64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut rng = lockstep_sim::Rng::fork(1, "bare");
    let mut queue: BinaryHeap<Reverse<(u64, u64, u32, u64)>> = BinaryHeap::new();
    let start = Instant::now();
    queue.push(Reverse((0, 0, 1, 0)));
    let (mut seq, mut handled) = (1u64, 0u64);
    while let Some(Reverse((time, _, to, msg))) = queue.pop() {
        handled += 1;
        if handled >= events {
            break;
        }
        let delay = latency.sample(&mut rng).as_nanos();
        queue.push(Reverse((time + delay, seq, 1 - to, black_box(msg + 1))));
        seq += 1;
    }
    (black_box(handled), start.elapsed().as_secs_f64())
}

fn node(name: &str) -> NodeConfig {
    NodeConfig {
        mono_start: Some(LocalTime::from_nanos(0)),
        ..NodeConfig::named(name)
    }
}

fn report(name: &str, events: u64, secs: f64) {
    println!(
        "{name:<44} {events:>12} events  {secs:>7.3} s  {:>8.2} M events/s",
        events as f64 / secs / 1e6
    );
}

/// The scenario of one lock family for the seeds-per-second figures: its default scenario
/// under the default chaos profile (scenarios/chaos/).
fn chaos_scenario(kind: &str) -> String {
    format!("scenarios/chaos/{kind}-unfenced.toml")
}

/// Seeds each family's scenario runs for its figure.
const FAMILY_SEEDS: u64 = 2_000;

/// CPU time this process has used, from /proc/self/stat (Linux; `None` elsewhere). On a
/// machine shared with other work, seeds per CPU-second is the steadier figure per core.
fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces): utime and
    // stime are the 12th and 13th, in clock ticks (100 per second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Seeds per second on one core: `lockstep sweep FILE --seeds FAMILY_SEEDS --jobs 1`, as a
/// library call, per family.
fn seeds_per_core() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for family in lockstep::families::all() {
        let file = chaos_scenario(family.kind());
        if !root.join(&file).exists() {
            println!("{:<44} no {file}", family.name());
            continue;
        }
        let target = lockstep::sweep::load(&root.join(file), None).expect("the scenario loads");
        let config = lockstep::sweep::SweepConfig {
            from: 1,
            count: FAMILY_SEEDS,
            shard: None,
            jobs: 1,
            check_determinism: false,
        };
        let (cpu, start) = (cpu_secs(), Instant::now());
        let summary = black_box(lockstep::sweep::sweep(&target, &config, |_| {}));
        let secs = start.elapsed().as_secs_f64();
        let per_cpu = cpu
            .zip(cpu_secs())
            .map(|(a, b)| {
                let cpu = (b - a).max(0.01);
                format!(
                    "{:>6.0} seeds/CPU-s  {:>5.0} CPU ns/event",
                    summary.runs as f64 / cpu,
                    cpu * 1e9 / summary.events.max(1) as f64
                )
            })
            .unwrap_or_default();
        println!(
            "{:<44} {:>12} seeds   {secs:>7.3} s  {:>6.0} seeds/s  {per_cpu}  ({:.0} events/seed)",
            format!("{}: {}", family.name(), target.scenario.name),
            summary.runs,
            summary.runs as f64 / secs,
            summary.events as f64 / summary.runs as f64,
        );
    }
}

fn main() {
    // Warm up caches and the allocator once.
    ping_pong(1_000_000, Distribution::Constant(Dur::from_micros(50)));
    let (e, s) = ping_pong(20_000_000, Distribution::Constant(Dur::from_micros(50)));
    report("ping-pong, constant latency", e, s);
    let uniform = Distribution::Uniform {
        lo: Dur::from_micros(10),
        hi: Dur::from_micros(900),
    };
    let (e, s) = ping_pong(20_000_000, uniform.clone());
    report("ping-pong, uniform latency (one draw/msg)", e, s);
    let (bare_e, bare_s) = bare_ping_pong(20_000_000, uniform);
    report("bare BinaryHeap loop, the same ping-pong", bare_e, bare_s);
    println!(
        "{:<44} {:>12.2}x the bare loop's time per event",
        "engine / bare",
        (s / e as f64) / (bare_s / bare_e as f64)
    );

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/catalogue/k1-gc-pause-unfenced.toml");
    let scenario = lockstep::load(&path).expect("K1 loads").scenario;
    let seeds = 10_000u64;
    let start = Instant::now();
    let (mut events, mut invalid) = (0u64, 0u64);
    for seed in 0..seeds {
        let r = lockstep::run(&scenario, seed, false);
        events += r.events;
        invalid += u64::from(r.judged == lockstep_check::Validity::Invalid);
    }
    let secs = start.elapsed().as_secs_f64();
    report("K1 scenario, 10,000 seeds (run + check)", events, secs);
    println!(
        "{:<44} {seeds:>12} seeds   {:>8.0} seeds/s  ({invalid} of {seeds} invalid)",
        "",
        seeds as f64 / secs
    );

    println!("\nseeds per second on one core (sweep, 1 thread, {FAMILY_SEEDS} seeds each):");
    seeds_per_core();
}
