//! K1 side by side: the same seeds natively, under turmoil and under madsim (the example
//! client over RESP and the storage protocol), with each one's verdicts, in one session and
//! one binary (madsim's clock and randomness are its own only inside its runtime).
//!
//! ```sh
//! RUSTFLAGS="--cfg madsim" cargo run --release -p lockstep-bridge --features madsim,turmoil \
//!     --target-dir target/madsim --example side-by-side-k1 -- [SEEDS] [FILE]
//! ```
//!
//! prints seeds per second of each and the ratios native : turmoil : madsim. Built without
//! madsim (`cargo run --release -p lockstep-bridge --features turmoil --example
//! side-by-side-k1`), it compares the native engine and turmoil only.
#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall-clock time; it runs no simulation logic on it"
)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use lockstep::Scenario;
use lockstep_bridge::{Plan, Runtime};
use lockstep_check::History;

fn load(file: &Path, runtime: Runtime) -> (Scenario, Plan) {
    match Plan::load(file, runtime) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}

/// Runs seeds 1..=`seeds` through `run`; returns seeds per second and how many met the
/// scenario's expectation.
fn measure(
    name: &str,
    scenario: &Scenario,
    seeds: u64,
    run: impl Fn(u64) -> Result<History, String>,
) -> (f64, u64) {
    let start = Instant::now();
    let mut met = 0;
    for seed in 1..=seeds {
        let history = match run(seed) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("{name}: seed {seed}: {e}");
                std::process::exit(1);
            }
        };
        let verdict = lockstep_check::check(&history, &scenario.check_options)
            .expect("the bridge records well-formed histories");
        met += u64::from(scenario.expect.unmet(&verdict, None).is_empty());
    }
    (seeds as f64 / start.elapsed().as_secs_f64(), met)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seeds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let file = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/catalogue/k1-gc-pause-unfenced.toml")
    });
    let (scenario, turmoil_plan) = load(&file, Runtime::Turmoil);

    let start = Instant::now();
    let mut native_met = 0;
    for seed in 1..=seeds {
        native_met += u64::from(lockstep::run(&scenario, seed, false).unmet.is_empty());
    }
    let native = seeds as f64 / start.elapsed().as_secs_f64();
    let (turmoil, turmoil_met) = measure("turmoil", &scenario, seeds, |seed| {
        lockstep_bridge::turmoil::run(&turmoil_plan, seed).map(|r| r.history)
    });

    println!("{}: {seeds} seeds", scenario.name);
    println!("native   {native:>10.1} seeds/s  expectation met on {native_met}/{seeds}");
    println!("turmoil  {turmoil:>10.1} seeds/s  expectation met on {turmoil_met}/{seeds}");
    #[cfg(all(feature = "madsim", madsim))]
    {
        let (_, madsim_plan) = load(&file, Runtime::Madsim);
        let (madsim, madsim_met) = measure("madsim", &scenario, seeds, |seed| {
            lockstep_bridge::madsim::run(&madsim_plan, seed).map(|r| r.history)
        });
        println!("madsim   {madsim:>10.1} seeds/s  expectation met on {madsim_met}/{seeds}");
        println!(
            "ratio    native : turmoil : madsim = {:.1} : 1 : {:.1}",
            native / turmoil,
            madsim / turmoil
        );
    }
    #[cfg(not(all(feature = "madsim", madsim)))]
    {
        println!("ratio    native : turmoil = {:.1} : 1", native / turmoil);
        println!("madsim   not built (--features madsim with RUSTFLAGS=\"--cfg madsim\")");
    }
}
