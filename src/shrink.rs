//! Shrinking a failing fault schedule to a minimal one that still fails, with proptest's
//! shrink loop.
//!
//! `lockstep hunt` finds a seed whose run violates the scenario's property, then calls
//! [`shrink`] with that seed's [`Schedule`] and a predicate that runs the scenario under a
//! candidate schedule ([`crate::run_schedule`]) and says whether it still fails. Nothing here
//! knows about runs: the predicate is the only judge, so the tests can shrink against a
//! synthetic one.
//!
//! The search is proptest's, not a loop of our own: `ScheduleTree` is a
//! [`ValueTree`] whose `current()` starts at the failing schedule, a [`Strategy`] hands it to a
//! [`TestRunner`] (ignoring the runner's random generator), and the runner's shrink loop
//! simplifies while the predicate still fails and complicates when it passes; the minimal
//! schedule comes back in [`TestError::Fail`]. What "simpler" means, in the order tried:
//!
//! 1. **Fewer faults.** Each fault is dropped in turn, first to last, as proptest's
//!    `VecValueTree` removes elements: a drop that still fails stays dropped, one that passes
//!    is undone. One pass.
//! 2. **Smaller magnitudes**, fault by fault, each with proptest's `u64` [`BinarySearch`]
//!    toward its floor: a pause's length, a crash's `restart_after`, a partition's length, a
//!    delay's `extra` and length, a degrade's loss (down to 1 ppm, so it still changes
//!    something), duplication and length, a clock step's, slew's or strobe's |delta| (the
//!    sign kept) and a strobe's length, a drift's |ppm| (the sign kept), and a mark trigger's
//!    `occurrence` toward 1. Trigger times (`When::At`) and lapse times, nodes, shapes,
//!    partition modes, slew rates and strobe periods are left alone.
//! 3. **A shorter run**, toward the latest `When::At` time of the faults that remain (a file
//!    may not place a fault after its run's end).
//!
//! **Open-ended faults.** A pause without a length (until a `Resume`), a partition without
//! one (until a `Heal`), a crash without a restart and a delay without an end all last "for
//! the rest of the run". Within the run that is the same as lasting the original run's whole
//! duration: the timed end (resume, heal, restart, end of delay) would fall after the run
//! ends, and an explicit `Resume` or `Heal` still ends them first. So their search starts from
//! the original run's duration, and every smaller candidate is bounded (`Some`). The
//! original, open-ended form is kept unless a bounded one still fails.
//!
//! **Precision.** Time magnitudes are searched on a grid: whole milliseconds for a value of
//! at least 1 ms, whole microseconds for one of at least 1 µs, nanoseconds below; ppm and
//! occurrences in ones. A value's own original stays a candidate even when it is off the grid
//! (it is the known failing one). When the predicate is monotone in a magnitude, the result
//! is the smallest failing grid value (so within one grid step of the true boundary),
//! readable in a scenario file. Lengths the file requires to be positive (a pause's and a
//! partition's `for_ms`, a delay's `extra_ms` and `for_ms`) stop at one grid step, the run's
//! duration at one grid step or the latest fault time, whichever is later.
//!
//! **Determinism and bounds.** No wall clock is read and no random draw is used: the same
//! schedule and the same predicate give the same result. [`ShrinkLimits::max_tries`] bounds
//! the calls of the predicate, the first of which checks the original. Proptest's result
//! cache answers repeated candidates (the tree revisits the last failing schedule after each
//! rejected step, as proptest's own trees do) without calling the predicate again.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;

use lockstep_sim::{Dur, Fault, ScheduledFault, When};
use proptest::num::u64::BinarySearch;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::{
    Config, RngAlgorithm, RngSeed, TestCaseError, TestCaseResult, TestError, TestRng, TestRunner,
    basic_result_cache,
};

use crate::scenario::Schedule;

/// Bounds of one shrink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkLimits {
    /// The most calls of the predicate, the first of which checks the original schedule
    /// (0 is taken as 1). Each call is one run in `hunt`, so this bounds its time without a
    /// wall clock.
    pub max_tries: u64,
}

impl Default for ShrinkLimits {
    /// 2,000 tries. Each fault costs one try to drop; each magnitude of a fault that stays
    /// costs about log2 of its value in grid steps (16 for a minute in ms), and so does the
    /// run's duration: thirty faults, two of which stay, finish in 78 (see the tests).
    fn default() -> ShrinkLimits {
        ShrinkLimits { max_tries: 2_000 }
    }
}

/// The result of a shrink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shrunk {
    /// The smallest schedule found that still fails (the original if nothing smaller did).
    pub schedule: Schedule,
    /// Calls of the predicate, including the first on the original.
    pub tries: u64,
    /// How many of them failed on a new, smaller schedule: the steps the shrink kept.
    pub accepted: u64,
    /// True when every simplification was tried; false when `max_tries` stopped the search
    /// first (the schedule still fails, but may not be minimal; it is false too when the
    /// budget ran out just as the search would have ended).
    pub complete: bool,
}

/// Why a schedule could not be shrunk.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShrinkError {
    /// The predicate does not hold for the schedule it was given: there is nothing to shrink.
    #[error("the original schedule does not fail, so there is nothing to shrink")]
    OriginalPasses,
}

/// Shrinks `schedule`, which `fails`, to a minimal schedule that still `fails`: fewest faults,
/// then the smallest magnitudes, then the shortest run (see the module documentation for
/// the order and the precision).
///
/// `fails` must be deterministic; it is called at most `limits.max_tries` times. A panic in
/// `fails` is a harness bug, not a failure: it stops the shrink and is raised again here.
///
/// # Errors
/// [`ShrinkError::OriginalPasses`] when `fails(schedule)` is false.
pub fn shrink(
    schedule: &Schedule,
    limits: ShrinkLimits,
    fails: impl FnMut(&Schedule) -> bool,
) -> Result<Shrunk, ShrinkError> {
    let budget = Budget {
        tries: Rc::new(Cell::new(0)),
        max_tries: limits.max_tries.max(1),
        complete: Rc::new(Cell::new(false)),
    };
    let strategy = FromFailing {
        schedule: schedule.clone(),
        budget: budget.clone(),
    };
    let fails = RefCell::new(fails);
    let failures = Cell::new(0u64);
    let panicked: RefCell<Option<Box<dyn Any + Send>>> = RefCell::new(None);
    // Proptest catches panics and counts them as failures; a panic in a run is a harness
    // bug, so it is kept aside, the rest of the search passes without running, and the panic
    // is raised again below.
    let test = |candidate: Schedule| -> TestCaseResult {
        if panicked.borrow().is_some() {
            return Ok(());
        }
        budget.tries.set(budget.tries.get() + 1);
        match catch_unwind(AssertUnwindSafe(|| (fails.borrow_mut())(&candidate))) {
            Ok(true) => {
                failures.set(failures.get() + 1);
                Err(TestCaseError::fail("still fails"))
            }
            Ok(false) => Ok(()),
            Err(payload) => {
                *panicked.borrow_mut() = Some(payload);
                Ok(())
            }
        }
    };
    let mut runner =
        TestRunner::new_with_rng(config(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&strategy, test);
    if let Some(payload) = panicked.take() {
        resume_unwind(payload);
    }
    match result {
        Ok(()) => Err(ShrinkError::OriginalPasses),
        Err(TestError::Fail(_, schedule)) => Ok(Shrunk {
            schedule,
            tries: budget.tries.get(),
            accepted: failures.get().saturating_sub(1),
            complete: budget.complete.get(),
        }),
        Err(TestError::Abort(why)) => {
            panic!("harness bug: proptest gave up a shrink that rejects nothing: {why}")
        }
    }
}

/// The runner's configuration: one case (the failing schedule), a shrink bounded by the tree
/// itself, and nothing that reads the clock, the disk or the environment. Every field that
/// proptest lets `PROPTEST_*` variables set is overridden here, so the environment of the
/// process cannot change a shrink.
fn config() -> Config {
    Config {
        cases: 1,
        max_local_rejects: 0,
        max_global_rejects: 0,
        max_flat_map_regens: 0,
        failure_persistence: None,
        source_file: None,
        test_name: None,
        // The tree stops itself at `max_tries` runs (`Budget`), which proptest cannot count:
        // its iterations include answers from the result cache. Its own bound, which would
        // print a note to stderr, is set out of reach (`u32::MAX` would mean "4 × cases").
        max_shrink_iters: u32::MAX - 1,
        max_shrink_time: 0,
        result_cache: basic_result_cache,
        verbose: 0,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0),
        ..Config::default()
    }
}

/// The predicate's call count, shared by the test closure (which counts) and the tree (which
/// stops when it is spent), and whether the tree ran out of simplifications.
#[derive(Clone, Debug)]
struct Budget {
    tries: Rc<Cell<u64>>,
    max_tries: u64,
    complete: Rc<Cell<bool>>,
}

impl Budget {
    fn spent(&self) -> bool {
        self.tries.get() >= self.max_tries
    }
}

/// A strategy of one value: the failing schedule, as a [`ScheduleTree`] to shrink.
#[derive(Debug)]
struct FromFailing {
    schedule: Schedule,
    budget: Budget,
}

impl Strategy for FromFailing {
    type Tree = ScheduleTree;
    type Value = Schedule;

    /// The tree of the failing schedule; the runner's random generator is not used.
    fn new_tree(&self, _runner: &mut TestRunner) -> NewTree<Self> {
        Ok(ScheduleTree::new(&self.schedule, self.budget.clone()))
    }
}

/// Where the tree is in its order of simplifications.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Dropping fault `i` next.
    Drop(usize),
    /// Shrinking knob `j` (a magnitude of a remaining fault).
    Magnitude(usize),
    /// Shrinking the run's duration.
    Duration,
    /// Nothing left to try.
    Done,
}

/// The last simplification, which `complicate` undoes or narrows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Drop(usize),
    Magnitude(usize),
    Duration,
}

/// A value tree over schedules. `current()` is the original with the dropped faults left
/// out, each knob's magnitude applied, and the duration knob's duration.
#[derive(Clone, Debug)]
pub(crate) struct ScheduleTree {
    /// The original faults.
    faults: Vec<ScheduledFault>,
    /// Which of them are still in.
    kept: Vec<bool>,
    /// The original run's duration.
    duration: Dur,
    /// Magnitudes of the kept faults, built when the drops are done.
    knobs: Vec<Knob>,
    /// The run's duration, built when the magnitudes are done.
    duration_knob: Option<Knob>,
    phase: Phase,
    prev: Option<Step>,
    budget: Budget,
}

impl ScheduleTree {
    fn new(schedule: &Schedule, budget: Budget) -> ScheduleTree {
        ScheduleTree {
            faults: schedule.faults.clone(),
            kept: vec![true; schedule.faults.len()],
            duration: schedule.duration,
            knobs: Vec::new(),
            duration_knob: None,
            phase: Phase::Drop(0),
            prev: None,
            budget,
        }
    }

    /// The knobs of every kept fault, in fault order.
    fn build_knobs(&mut self) {
        let run = self.duration.as_nanos();
        self.knobs = self
            .faults
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.kept[i])
            .flat_map(|(i, f)| knobs_of(i, f, run))
            .collect();
    }

    /// The duration knob: no shorter than the latest fault time that remains, nor than one
    /// grid step (a run lasts more than 0).
    fn build_duration_knob(&mut self) {
        let last_at = self
            .faults
            .iter()
            .zip(&self.kept)
            .filter_map(|(f, &kept)| match f.when {
                When::At(t) if kept => Some(t.as_nanos()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let run = self.duration.as_nanos();
        let quantum = time_quantum(run);
        let floor = last_at.div_ceil(quantum).max(1);
        self.duration_knob = Some(Knob::new(usize::MAX, Field::Duration, run, floor, quantum));
    }

    /// Back to the last failing schedule, when the budget is spent after a passing try: the
    /// runner tries it again (a cache hit, not a run), sees it fail, and `simplify` stops.
    fn back_to_failing(&mut self, step: Step) {
        match step {
            Step::Drop(i) => self.kept[i] = true,
            Step::Magnitude(j) => while self.knobs[j].search.complicate() {},
            Step::Duration => {
                let knob = self.duration_knob.as_mut().expect("built before use");
                while knob.search.complicate() {}
            }
        }
    }
}

impl ValueTree for ScheduleTree {
    type Value = Schedule;

    fn current(&self) -> Schedule {
        let mut faults = self.faults.clone();
        for knob in &self.knobs {
            knob.apply(&mut faults[knob.fault]);
        }
        let faults = faults
            .into_iter()
            .zip(&self.kept)
            .filter_map(|(f, &kept)| kept.then_some(f))
            .collect();
        let duration = self
            .duration_knob
            .as_ref()
            .and_then(Knob::magnitude)
            .map_or(self.duration, Dur::from_nanos);
        Schedule { faults, duration }
    }

    /// Called after `current()` failed: the next simpler candidate, in the order of the
    /// module documentation.
    fn simplify(&mut self) -> bool {
        self.prev = None;
        if self.budget.spent() {
            return false;
        }
        loop {
            match self.phase {
                Phase::Drop(i) if i < self.faults.len() => {
                    self.kept[i] = false;
                    self.prev = Some(Step::Drop(i));
                    self.phase = Phase::Drop(i + 1);
                    return true;
                }
                Phase::Drop(_) => {
                    self.build_knobs();
                    self.phase = Phase::Magnitude(0);
                }
                Phase::Magnitude(j) if j < self.knobs.len() => {
                    // A binary search that cannot simplify rests on its last failing value.
                    if self.knobs[j].search.simplify() {
                        self.prev = Some(Step::Magnitude(j));
                        return true;
                    }
                    self.phase = Phase::Magnitude(j + 1);
                }
                Phase::Magnitude(_) => {
                    self.build_duration_knob();
                    self.phase = Phase::Duration;
                }
                Phase::Duration => {
                    let knob = self.duration_knob.as_mut().expect("built on entry");
                    if knob.search.simplify() {
                        self.prev = Some(Step::Duration);
                        return true;
                    }
                    self.phase = Phase::Done;
                }
                Phase::Done => {
                    self.budget.complete.set(true);
                    return false;
                }
            }
        }
    }

    /// Called after `current()` passed: a candidate between it and the last failing one.
    /// A dropped fault comes back (and the runner tries that known failing schedule again,
    /// as with proptest's `VecValueTree`); a binary search narrows.
    fn complicate(&mut self) -> bool {
        let Some(step) = self.prev.take() else {
            return false;
        };
        if self.budget.spent() {
            self.back_to_failing(step);
            return true;
        }
        match step {
            Step::Drop(i) => {
                self.kept[i] = true;
                true
            }
            Step::Magnitude(j) => {
                // After a pass below the last failing value, a binary search always has a
                // value between them to offer (its `complicate` is false only at that value).
                let more = self.knobs[j].search.complicate();
                if more {
                    self.prev = Some(step);
                }
                more
            }
            Step::Duration => {
                let knob = self.duration_knob.as_mut().expect("built before use");
                let more = knob.search.complicate();
                if more {
                    self.prev = Some(step);
                }
                more
            }
        }
    }
}

/// Which magnitude a knob sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    PauseFor,
    CrashRestartAfter,
    TerminateGrace,
    PartitionFor,
    DelayExtra,
    DelayFor,
    StepDelta,
    SlewDelta,
    DriftPpm,
    DegradeLoss,
    DegradeDuplicate,
    DegradeFor,
    StrobeDelta,
    StrobeFor,
    Occurrence,
    Duration,
}

/// One magnitude under binary search, in grid steps (`quantum`) of its unit. At `start` (the
/// original rounded up to the grid) it leaves the original as it was; below, it is that many
/// steps.
#[derive(Clone, Debug)]
struct Knob {
    /// Index of the fault in the original schedule (unused for the duration).
    fault: usize,
    field: Field,
    quantum: u64,
    start: u64,
    search: BinarySearch,
}

impl Knob {
    /// A knob over `original` (in its unit), searching down to `floor` grid steps.
    fn new(fault: usize, field: Field, original: u64, floor: u64, quantum: u64) -> Knob {
        let start = original.div_ceil(quantum);
        Knob {
            fault,
            field,
            quantum,
            start,
            search: BinarySearch::new_above(floor, start),
        }
    }

    /// The magnitude it sets, or `None` where it leaves the original.
    fn magnitude(&self) -> Option<u64> {
        let steps = self.search.current();
        (steps != self.start).then(|| steps * self.quantum)
    }

    /// Sets the magnitude on `f`, the fault it was built for.
    fn apply(&self, f: &mut ScheduledFault) {
        let Some(m) = self.magnitude() else {
            return;
        };
        let signed = |old: i64| {
            let m = i64::try_from(m).expect("below the original's magnitude");
            if old < 0 { -m } else { m }
        };
        match (self.field, &mut f.fault, &mut f.when) {
            (Field::Occurrence, _, When::OnMark { occurrence, .. }) => {
                *occurrence = u32::try_from(m).expect("below the original occurrence");
            }
            (Field::PauseFor, Fault::Pause { duration, .. }, _)
            | (Field::PauseFor, Fault::Freeze { duration, .. }, _)
            | (Field::PartitionFor, Fault::Partition { duration, .. }, _)
            | (Field::DelayFor, Fault::Delay { duration, .. }, _)
            | (
                Field::CrashRestartAfter,
                Fault::Crash {
                    restart_after: duration,
                    ..
                },
                _,
            ) => *duration = Some(Dur::from_nanos(m)),
            (Field::DelayExtra, Fault::Delay { extra, .. }, _)
            | (Field::TerminateGrace, Fault::Terminate { grace: extra, .. }, _) => {
                *extra = Dur::from_nanos(m);
            }
            (Field::StepDelta, Fault::ClockStep { delta_ns, .. }, _)
            | (Field::SlewDelta, Fault::ClockSlew { delta_ns, .. }, _) => {
                *delta_ns = signed(*delta_ns);
            }
            (Field::DriftPpm, Fault::ClockDrift { drift_ppm, .. }, _) => {
                *drift_ppm = signed(*drift_ppm);
            }
            (Field::DegradeLoss, Fault::Degrade { loss_ppm, .. }, _) => {
                *loss_ppm = u32::try_from(m).expect("below the original ppm");
            }
            (Field::DegradeDuplicate, Fault::Degrade { duplicate_ppm, .. }, _) => {
                *duplicate_ppm = u32::try_from(m).expect("below the original ppm");
            }
            (Field::DegradeFor, Fault::Degrade { duration, .. }, _) => {
                *duration = Some(Dur::from_nanos(m));
            }
            (Field::StrobeDelta, Fault::ClockStrobe { delta_ns, .. }, _) => {
                *delta_ns = signed(*delta_ns);
            }
            (Field::StrobeFor, Fault::ClockStrobe { duration, .. }, _) => {
                *duration = Dur::from_nanos(m);
            }
            (field, fault, _) => unreachable!("a {field:?} knob on {fault:?}"),
        }
    }
}

/// The grid of a time magnitude: whole ms from 1 ms, whole µs from 1 µs, else ns.
fn time_quantum(ns: u64) -> u64 {
    match ns {
        1_000_000.. => 1_000_000,
        1_000.. => 1_000,
        _ => 1,
    }
}

/// The knobs of fault `i`, in the order they are shrunk. `run` is the original run's
/// duration in ns, the length an open-ended fault starts from.
fn knobs_of(i: usize, f: &ScheduledFault, run: u64) -> Vec<Knob> {
    let time = |field, ns: u64, positive: bool| {
        let quantum = time_quantum(ns);
        Knob::new(i, field, ns, u64::from(positive), quantum)
    };
    let open = |d: &Option<Dur>| d.map_or(run, Dur::as_nanos);
    let mut knobs = match &f.fault {
        Fault::Pause { duration, .. } | Fault::Freeze { duration, .. } => {
            vec![time(Field::PauseFor, open(duration), true)]
        }
        Fault::Crash { restart_after, .. } => {
            vec![time(Field::CrashRestartAfter, open(restart_after), false)]
        }
        Fault::Terminate { grace, .. } => {
            vec![time(Field::TerminateGrace, grace.as_nanos(), false)]
        }
        Fault::Partition { duration, .. } => vec![time(Field::PartitionFor, open(duration), true)],
        Fault::Delay {
            extra, duration, ..
        } => vec![
            time(Field::DelayExtra, extra.as_nanos(), true),
            time(Field::DelayFor, open(duration), true),
        ],
        Fault::ClockStep { delta_ns, .. } => {
            vec![time(Field::StepDelta, delta_ns.unsigned_abs(), false)]
        }
        Fault::ClockSlew { delta_ns, .. } => {
            vec![time(Field::SlewDelta, delta_ns.unsigned_abs(), false)]
        }
        Fault::ClockDrift { drift_ppm, .. } => {
            vec![Knob::new(
                i,
                Field::DriftPpm,
                drift_ppm.unsigned_abs(),
                0,
                1,
            )]
        }
        // Loss stays at least 1 ppm, so a degrade never becomes one that changes nothing
        // (a file refuses it; dropping the fault is tried first anyway).
        Fault::Degrade {
            loss_ppm,
            duplicate_ppm,
            duration,
            ..
        } => vec![
            Knob::new(i, Field::DegradeLoss, u64::from(*loss_ppm), 1, 1),
            Knob::new(i, Field::DegradeDuplicate, u64::from(*duplicate_ppm), 0, 1),
            time(Field::DegradeFor, open(duration), true),
        ],
        // The period stays: a longer one is not simpler, only different.
        Fault::ClockStrobe {
            delta_ns, duration, ..
        } => vec![
            time(Field::StrobeDelta, delta_ns.unsigned_abs(), true),
            time(Field::StrobeFor, duration.as_nanos(), true),
        ],
        Fault::Resume { .. } | Fault::Restart { .. } | Fault::Heal => Vec::new(),
        // A new fault kind adds its magnitudes here: this match is exhaustive on purpose, so
        // a new variant does not compile until it is shrunk.
    };
    if let When::OnMark { occurrence, .. } = &f.when {
        knobs.push(Knob::new(
            i,
            Field::Occurrence,
            u64::from(*occurrence),
            1,
            1,
        ));
    }
    knobs
}
