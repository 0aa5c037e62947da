//! K1 side by side: the same seeds natively and under turmoil (the example client over
//! RESP and the storage protocol), with both verdicts, in one session.
//!
//! `cargo run --release -p lockstep-bridge --features turmoil --example turmoil-k1 -- [SEEDS] [FILE]`
//! prints seeds per second of each and their ratio.
#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall-clock time; it runs no simulation logic on it"
)]

use std::path::PathBuf;
use std::time::Instant;

use lockstep_bridge::{Plan, Runtime};

fn main() {
    let mut args = std::env::args().skip(1);
    let seeds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let file = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/catalogue/k1-gc-pause-unfenced.toml")
    });
    let (scenario, plan) = match Plan::load(&file, Runtime::Turmoil) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };

    let start = Instant::now();
    let mut native_met = 0;
    for seed in 1..=seeds {
        native_met += u64::from(lockstep::run(&scenario, seed, false).unmet.is_empty());
    }
    let native = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut turmoil_met = 0;
    for seed in 1..=seeds {
        let ran = match lockstep_bridge::turmoil::run(&plan, seed) {
            Ok(ran) => ran,
            Err(e) => {
                eprintln!("{}: seed {seed}: {e}", file.display());
                std::process::exit(1);
            }
        };
        let verdict = lockstep_check::check(&ran.history, &scenario.check_options)
            .expect("the bridge records well-formed histories");
        turmoil_met += u64::from(scenario.expect.unmet(&verdict, None).is_empty());
    }
    let turmoil = start.elapsed().as_secs_f64();

    let (n, t) = (seeds as f64 / native, seeds as f64 / turmoil);
    println!("{}: {seeds} seeds", scenario.name);
    println!("native   {n:>10.1} seeds/s  expectation met on {native_met}/{seeds}");
    println!("turmoil  {t:>10.1} seeds/s  expectation met on {turmoil_met}/{seeds}");
    println!("ratio    native : turmoil = {:.1} : 1", n / t);
}
