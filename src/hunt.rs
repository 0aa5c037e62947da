//! `lockstep hunt`: search seeds for a violation, shrink its fault schedule, and write a
//! standalone scenario that replays it.
//!
//! The search runs seeds in order on worker threads (whole runs per thread; nothing inside a
//! run is shared) and keeps the first `candidates` failing seeds (3 by default) by index, so
//! the seeds found do not depend on the number of threads. The schedule of each one's run
//! (the file's faults and what its chaos profile drew) is then shrunk with proptest
//! ([`crate::shrink`]) against its seed: fewer faults, smaller magnitudes, a shorter run, as
//! long as the run still violates the scenario's property; the smallest result is kept
//! (fewest faults, then shortest run, then earliest seed). One seed's violation may hinge on
//! the timing of many faults where the next failing seed's needs one: shrinking is a local
//! search from each seed's schedule, so more starting points give smaller reproductions. The triggers that did not fire in the shrunk run are left
//! out (a trigger that does not fire changes nothing in a run, and the written file's own
//! triggers must fire). The result is written back into the original file
//! ([`crate::scenario::write`]), without its chaos profile, and replayed from that text before
//! it is handed out: a file `hunt` returns reproduces the violation.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lockstep_check::Validity;
use lockstep_sim::Fault;

use crate::run::{RunResult, run, run_schedule};
use crate::scenario::write::write_scenario;
use crate::scenario::{Others, Pointless, Scenario, Schedule, parse, pointless};
use crate::shrink::{ShrinkError, ShrinkLimits, Shrunk, shrink};

/// What to search and how hard.
#[derive(Clone, Copy, Debug)]
pub struct HuntOptions {
    /// The first seed.
    pub from: u64,
    /// How many seeds to try, at most.
    pub seeds: u64,
    /// Worker threads for the search (1 or more).
    pub jobs: usize,
    /// Bound on the runs each shrink may make.
    pub max_tries: u64,
    /// How many failing seeds to shrink (the first ones, in seed order); the smallest
    /// schedule is kept. A timing-sensitive violation may need many faults to happen at its
    /// seed while the next failing seed needs one, so the first failure is not always the
    /// best reproduction.
    pub candidates: u64,
}

/// A violation found and shrunk.
#[derive(Debug)]
pub struct Found {
    /// The failing seed.
    pub seed: u64,
    /// How many seeds were tried up to and including it.
    pub seeds_tried: u64,
    /// How many failing seeds were shrunk to choose it (at most `HuntOptions::candidates`).
    pub candidates: u64,
    /// The schedule of the failing run as the scenario gave it.
    pub original: Schedule,
    /// The shrunk schedule.
    pub shrunk: Schedule,
    /// Runs the shrink made.
    pub tries: u64,
    /// False when the shrink stopped at its bound rather than at a minimum.
    pub complete: bool,
    /// The standalone scenario file that replays the shrunk run.
    pub text: String,
    /// That file's run, replayed from the text.
    pub replay: RunResult,
}

/// How a hunt ended.
#[derive(Debug)]
pub enum Hunted {
    /// No seed of the range violated the property.
    Clean {
        /// Seeds tried.
        seeds: u64,
    },
    /// A violation, shrunk and written.
    Found(Box<Found>),
}

/// True when the run is a violation of the scenario's property (not merely short of a bound
/// or of recovery).
fn violates(r: &RunResult) -> bool {
    r.judged == Validity::Invalid
}

/// Hunts over `scenario` (parsed from `text`, read from `path`).
///
/// # Errors
/// A message when the shrunk schedule cannot be written back or the written file does not
/// replay the violation: a harness bug, reported rather than hidden.
pub fn hunt(
    text: &str,
    path: &Path,
    scenario: &Scenario,
    options: HuntOptions,
) -> Result<Hunted, String> {
    let failing = first_failing(scenario, options);
    let candidates = failing.len() as u64;
    // Each failing seed shrunk; the fewest faults win, then the shortest run, then the
    // earliest seed.
    let mut best: Option<(u64, Schedule, Shrunk)> = None;
    for index in failing {
        let seed = options.from.wrapping_add(index);
        let original = scenario.schedule(seed);
        let mut fails = |s: &Schedule| violates(&run_schedule(scenario, seed, s, false));
        let shrunk = shrink_to_fixpoint(&original, options.max_tries, &mut fails)
            .map_err(|e| format!("seed {seed}: {e} (harness bug)"))?;
        let size = |s: &Shrunk| (s.schedule.faults.len(), s.schedule.duration);
        if best
            .as_ref()
            .is_none_or(|(_, _, b)| size(&shrunk) < size(b))
        {
            best = Some((index, original, shrunk));
        }
    }
    let Some((index, original, mut shrunk)) = best else {
        return Ok(Hunted::Clean {
            seeds: options.seeds,
        });
    };
    let seed = options.from.wrapping_add(index);
    let unfired = run_schedule(scenario, seed, &shrunk.schedule, false).unfired;
    let mut place = 0;
    shrunk.schedule.faults.retain(|_| {
        place += 1;
        !unfired.iter().any(|u| u.index == place - 1)
    });
    if leave_out_pointless(scenario, &mut shrunk.schedule)
        && !violates(&run_schedule(scenario, seed, &shrunk.schedule, false))
    {
        return Err(format!(
            "seed {seed}: the shrunk run needs a terminated node to come back, which a \
             scenario file cannot say"
        ));
    }
    let names = scenario.node_names();
    let note = format!(
        "Written by `lockstep hunt` from {} (scenario {}), seed {seed}: {} of {} faults and {} of \
         {} of the run are enough to make {} {}; shrunk in {} runs{}. Its [expect] asks for that \
         verdict.\nReplay: lockstep run {{this file}}",
        path.display(),
        scenario.name,
        shrunk.schedule.faults.len(),
        original.faults.len(),
        shrunk.schedule.duration,
        original.duration,
        scenario.expect.property,
        Validity::Invalid,
        shrunk.tries,
        if shrunk.complete {
            ""
        } else {
            " (stopped at the bound)"
        },
    );
    // The file is named for what was found, and expects it: the original's bounds too when
    // the found run meets them, else its property's violation alone.
    let write = |bounds: bool| -> Result<(String, RunResult), String> {
        let found = as_found(text, &scenario.name, seed, bounds);
        let written = write_scenario(&found, path, &names, &shrunk.schedule, seed, &note)
            .map_err(|e| format!("cannot write the shrunk schedule back: {e}"))?;
        let replayed = parse(&written, path)
            .map_err(|e| format!("the written scenario does not load (harness bug): {e}"))?;
        let replay = run(&replayed, seed, false);
        Ok((written, replay))
    };
    let (mut written, mut replay) = write(true)?;
    if !replay.expected() {
        (written, replay) = write(false)?;
    }
    let expected = run_schedule(scenario, seed, &shrunk.schedule, false);
    if !violates(&replay) || replay.trace_hash != expected.trace_hash {
        return Err(format!(
            "the written scenario does not replay the shrunk run (harness bug): trace {:016x}, verdict {}; expected {:016x}, invalid",
            replay.trace_hash, replay.judged, expected.trace_hash
        ));
    }
    if !replay.expected() {
        return Err(format!(
            "the written scenario's [expect] is not met by its run (harness bug): {}",
            replay.unmet.join("; ")
        ));
    }
    Ok(Hunted::Found(Box::new(Found {
        seed,
        seeds_tried: index + 1,
        candidates,
        original,
        shrunk: shrunk.schedule,
        tries: shrunk.tries,
        complete: shrunk.complete,
        text: written,
        replay,
    })))
}

/// Leaves out of `schedule` what a scenario file may not say because it can never apply
/// (`crate::scenario::pointless`: a resume of a node no pause holds, a restart of a node told
/// to stop for good), which shrinking can make of a file's faults: an open pause bounded to
/// end before its resume. The written file has no chaos profile. Whether anything changed.
fn leave_out_pointless(scenario: &Scenario, schedule: &mut Schedule) -> bool {
    let faults: Vec<_> = schedule.faults.iter().cloned().enumerate().collect();
    let roles: Vec<_> = scenario
        .system
        .layout()
        .nodes
        .iter()
        .map(|&(_, role)| role)
        .collect();
    let others = Others {
        chaos: false,
        watchdog: scenario.clocks.iter().any(|c| c.watchdog.is_some()),
    };
    let findings = pointless(&faults, &roles, others);
    if findings.is_empty() {
        return false;
    }
    let mut place = 0;
    schedule.faults.retain_mut(|f| {
        place += 1;
        match findings
            .iter()
            .find(|x| x.at.index == place - 1)
            .map(|x| x.why)
        {
            None => true,
            Some(Pointless::CrashRestart { .. }) => {
                if let Fault::Crash { restart_after, .. } = &mut f.fault {
                    *restart_after = None;
                }
                true
            }
            Some(Pointless::Restart { .. } | Pointless::Resume { .. }) => false,
        }
    });
    true
}

/// Shrinks `original` again and again until a pass changes nothing or `max_tries` runs are
/// spent. One pass of proptest's shrink drops each fault once, before the magnitudes shrink;
/// a fault that was needed only for a longer pause or an earlier mark can go in a later pass.
fn shrink_to_fixpoint(
    original: &Schedule,
    max_tries: u64,
    fails: &mut impl FnMut(&Schedule) -> bool,
) -> Result<Shrunk, ShrinkError> {
    let mut shrunk = shrink(original, ShrinkLimits { max_tries }, &mut *fails)?;
    loop {
        let left = max_tries.saturating_sub(shrunk.tries);
        if !shrunk.complete || left == 0 {
            return Ok(shrunk);
        }
        let again = shrink(
            &shrunk.schedule,
            ShrinkLimits { max_tries: left },
            &mut *fails,
        )?;
        let changed = again.schedule != shrunk.schedule;
        shrunk = Shrunk {
            tries: shrunk.tries + again.tries,
            accepted: shrunk.accepted + again.accepted,
            ..again
        };
        if !changed {
            return Ok(shrunk);
        }
    }
}

/// The lowest `options.candidates` indices (from `options.from`) whose runs violate the
/// property, in order, searched on `options.jobs` threads; the same answer for any number of
/// threads (every index below the last one returned is run).
fn first_failing(scenario: &Scenario, options: HuntOptions) -> Vec<u64> {
    let want = usize::try_from(options.candidates.max(1)).unwrap_or(usize::MAX);
    let next = AtomicU64::new(0);
    // The failing indices found so far, and the `want`-th smallest of them once there are
    // that many: an index past it cannot be among the first `want`.
    let found: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let bound = AtomicU64::new(u64::MAX);
    let worker = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= options.seeds || i >= bound.load(Ordering::Relaxed) {
                return;
            }
            if violates(&run(scenario, options.from.wrapping_add(i), false)) {
                let mut found = found.lock().expect("no worker panics while holding it");
                found.push(i);
                found.sort_unstable();
                if found.len() >= want {
                    bound.fetch_min(found[want - 1], Ordering::Relaxed);
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..options.jobs.max(1) {
            scope.spawn(worker);
        }
        worker();
    });
    let mut found = found.into_inner().expect("no worker panicked");
    found.truncate(want);
    found
}

/// The text as the file of what hunt found in scenario `name` at `seed`: named
/// `<name>-seed-<seed>`, and its `[expect]` asking for the violation (`verdict = "invalid"`
/// of its property), with the original's other bounds when `bounds`, and without `recovers`,
/// which needs the chaos profile the written file no longer has, or `invalid_rate`, a claim
/// about many seeds that cannot go with a verdict. The text as it was when it does not parse
/// (`write_scenario` then says why).
fn as_found(text: &str, name: &str, seed: u64, bounds: bool) -> String {
    use toml_edit::{Item, Table, value};
    let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
        return text.to_string();
    };
    if let Some(s) = doc.get_mut("scenario").and_then(Item::as_table_like_mut) {
        s.insert("name", value(format!("{name}-seed-{seed}")));
    }
    if !doc.contains_key("expect") {
        doc.insert("expect", Item::Table(Table::new()));
    }
    if let Some(e) = doc.get_mut("expect").and_then(Item::as_table_like_mut) {
        e.remove("recovers");
        e.remove("invalid_rate");
        if !bounds {
            let others: Vec<String> = e
                .iter()
                .map(|(k, _)| k.to_string())
                .filter(|k| k != "property")
                .collect();
            for k in others {
                e.remove(&k);
            }
        }
        e.insert("verdict", value(Validity::Invalid.to_string()));
    }
    doc.to_string()
}
