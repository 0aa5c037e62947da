//! The timeline of one run, built from the run and what its world left
//! ([`crate::run::KeptRun`]): the history and verdict give the lanes, the held intervals, the
//! operations and the overlaps ([`Timeline::from_history`]); the system's layout gives the
//! lane kinds; the world's fault log the faults with their true ends and each node's clock
//! offsets; the servers' observations of who holds the lock what each server granted.
//! Drawing is `lockstep_reports::timeline::svg`.
//!
//! Clock offsets are exact: a node's clocks are piecewise-linear and change only at clock
//! faults, at the end of a slew and at the steps of a strobe, all of which follow from the
//! fault log. The builder replays those changes on a copy of the node's clocks at true time
//! zero, with the simulator's own [`Clocks`], and takes a point on each side of every change;
//! the replayed clocks are compared with the world's at the end, and a node whose replay does
//! not match is named in the timeline's notes.

use lockstep_models::Role;
use lockstep_models::observe::{HolderView, Observation};
use lockstep_reports::timeline::{
    ClockPoint, ClockSeries, FaultMark, FaultSpan, Granted, LaneKind, Timeline,
};
use lockstep_sim::{AppliedFault, ClockKind, Clocks, Fault, LocalTime, NodeId, Record, Time};

use crate::run::{KeptRun, RunResult, run_kept};
use crate::scenario::{Scenario, Schedule};

/// Runs `scenario` with `seed` (its own schedule for that seed) and builds the run's timeline.
pub fn of_seed(scenario: &Scenario, seed: u64) -> (RunResult, Timeline) {
    of_schedule(scenario, seed, &scenario.schedule(seed))
}

/// Runs `scenario` with `seed` under `schedule` (a shrunk one, say) and builds its timeline.
pub fn of_schedule(scenario: &Scenario, seed: u64, schedule: &Schedule) -> (RunResult, Timeline) {
    let kept = run_kept(scenario, seed, schedule, false);
    let t = timeline(scenario, &kept);
    (kept.result, t)
}

/// The timeline of a kept run of `scenario`.
pub fn timeline(scenario: &Scenario, kept: &KeptRun) -> Timeline {
    let result = &kept.result;
    let mut t = Timeline::from_history(&result.history, &result.verdict);
    t.title = scenario.name.clone();
    t.subtitle = format!(
        "seed {} · {} {} (resource {}, mutual exclusion {}) · {} stale ops accepted, {} \
         rejected, {} lost updates · trace {:016x}",
        result.seed,
        result.property,
        result.judged,
        result.verdict.resource,
        result.verdict.mutual_exclusion,
        result.verdict.stale_accepted.count,
        result.verdict.stale_rejected,
        result.verdict.lost_updates.count,
        result.trace_hash
    );
    let layout = scenario.system.layout();
    for (lane, (_, role)) in t.lanes.iter_mut().zip(&layout.nodes) {
        lane.kind = match role {
            Role::Server => LaneKind::Server,
            Role::Coordinator { .. } => LaneKind::Coordinator,
            Role::Storage => LaneKind::Storage,
            Role::Client => LaneKind::Client,
        };
    }
    t.storage_lane = t.lanes.iter().position(|l| l.kind == LaneKind::Storage);
    let end = result.history.end_ns;
    let log = &kept.fault_log;
    t.faults = faults(log, end);
    for (i, initial) in kept.initial_clocks.iter().enumerate() {
        let node = NodeId(i as u32);
        let offset = scenario.clocks.get(i).map_or(0, |c| c.wall_offset_ns);
        let (points, segments) = clock_points(node, initial, offset, log, end);
        let replayed = &segments.last().expect("a segment from time zero").1;
        if Some(replayed) != kept.final_clocks.get(i) {
            t.notes.push(format!(
                "The clock line of {} is approximate: replaying its clock faults did not give \
                 the world's clocks.",
                result.history.name(lockstep_check::NodeId(node.0))
            ));
        }
        t.clocks.push(ClockSeries { lane: i, points });
        t.granted
            .extend(server_grants(i, &kept.observations, &segments, log, end));
    }
    t
}

/// The faults of a fault log as spans: each start paired with its end (a resume, a restart, a
/// heal, or the logged end of a timed fault), or running to `end_ns`.
fn faults(log: &[AppliedFault], end_ns: u64) -> Vec<FaultSpan> {
    let mut spans = Vec::new();
    for (i, f) in log.iter().enumerate() {
        if f.ended {
            continue;
        }
        let later = &log[i + 1..];
        let until = |done: &dyn Fn(&AppliedFault) -> bool| {
            later
                .iter()
                .find(|g| done(g))
                .map_or(end_ns, |g| g.time.as_nanos())
        };
        let (kind, to_ns) = match &f.fault {
            Fault::Pause { node, .. } | Fault::Freeze { node, .. } => (
                FaultMark::Pause,
                until(&|g| match g.fault {
                    Fault::Resume { node: n } | Fault::Crash { node: n, .. } => n == *node,
                    _ => false,
                }),
            ),
            Fault::Crash { node, .. } => (
                FaultMark::Crash,
                until(&|g| matches!(g.fault, Fault::Restart { node: n } if n == *node)),
            ),
            Fault::Terminate { node, .. } => (
                FaultMark::Terminate,
                until(&|g| matches!(g.fault, Fault::Crash { node: n, .. } if n == *node)),
            ),
            Fault::Partition { .. } => (
                FaultMark::Partition,
                until(&|g| {
                    matches!(g.fault, Fault::Heal) && g.nodes.iter().any(|n| f.nodes.contains(n))
                }),
            ),
            Fault::ClockStep { .. } => (FaultMark::ClockStep, f.time.as_nanos()),
            Fault::ClockSlew { .. } => (FaultMark::ClockSlew, f.time.as_nanos()),
            Fault::ClockDrift { .. } => (FaultMark::ClockDrift, f.time.as_nanos()),
            Fault::ClockStrobe { .. } | Fault::Delay { .. } | Fault::Degrade { .. } => {
                let kind = match f.fault {
                    Fault::ClockStrobe { .. } => FaultMark::ClockStrobe,
                    Fault::Delay { .. } => FaultMark::Delay,
                    _ => FaultMark::Degrade,
                };
                (kind, until(&|g| g.ended && g.fault == f.fault))
            }
            Fault::Resume { .. } | Fault::Restart { .. } | Fault::Heal => continue,
        };
        spans.push(FaultSpan {
            kind,
            lanes: f.nodes.iter().map(|n| n.index()).collect(),
            from_ns: f.time.as_nanos(),
            to_ns,
            detail: f.detail.clone(),
        });
    }
    spans
}

/// A change of a node's clocks the world makes by itself, after a logged fault.
#[derive(Clone, Copy, Debug)]
enum Change {
    EndSlew,
    Step(i64),
}

/// The node's clocks from a true time on, until the next segment's time.
type Segments = Vec<(u64, Clocks)>;

/// The node's clock offsets at every change (a point on each side), at zero and at the end,
/// and its clocks over the run (the last segment's clocks are the replay's result).
fn clock_points(
    node: NodeId,
    initial: &Clocks,
    wall_offset_ns: i64,
    log: &[AppliedFault],
    end_ns: u64,
) -> (Vec<ClockPoint>, Segments) {
    let zero = Time::ZERO;
    let wall_epoch = initial.wall(zero).as_nanos() - wall_offset_ns;
    let mono_zero = initial.mono(zero).as_nanos();
    let point = |c: &Clocks, t: u64| {
        let at = Time::from_nanos(t);
        let true_ns = i64::try_from(t).unwrap_or(i64::MAX);
        ClockPoint {
            t_ns: t,
            wall_offset_ns: c.wall(at).as_nanos() - wall_epoch - true_ns,
            mono_offset_ns: c.mono(at).as_nanos() - mono_zero - true_ns,
        }
    };
    let mut points = Vec::new();
    let mut segments: Segments = Vec::new();
    let last = replay(node, initial, log, end_ns, |t, clocks, side| {
        points.push(point(clocks, t));
        if side == Side::After {
            segments.push((t, clocks.clone()));
        }
    });
    points.push(point(&last, end_ns));
    points.dedup();
    (points, segments)
}

/// Which side of a change [`replay`] shows the clocks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The clocks just before the change, at its instant: the end of a segment.
    Before,
    /// The clocks from the change on: the start of a segment.
    After,
}

/// Replays `node`'s clock faults from its `initial` clocks up to `end_ns`, as the world
/// applied them, and returns its clocks at the end. `see(t, clocks, side)` is shown the
/// clocks on each side of every change at true time `t`, in order, beginning with the
/// initial clocks as the segment that starts at zero.
fn replay(
    node: NodeId,
    initial: &Clocks,
    log: &[AppliedFault],
    end_ns: u64,
    mut see: impl FnMut(u64, &Clocks, Side),
) -> Clocks {
    let mut clocks = initial.clone();
    see(0, &clocks, Side::After);
    // Changes the world schedules itself: (true time, order scheduled, change).
    let mut pending: Vec<(u64, usize, Change)> = Vec::new();
    let mut seq = 0;
    // Shows the clocks on both sides of `change`, made at `t`.
    let mut change = |clocks: &mut Clocks, t: u64, change: &mut dyn FnMut(&mut Clocks)| {
        see(t, clocks, Side::Before);
        change(clocks);
        see(t, clocks, Side::After);
    };
    let scheduled = |c: Change, t: u64| {
        let at = Time::from_nanos(t);
        move |clocks: &mut Clocks| match c {
            Change::EndSlew => {
                clocks.end_slew(at);
            }
            Change::Step(delta) => clocks.step(at, delta),
        }
    };
    let mine = log
        .iter()
        .filter(|f| !f.ended && f.nodes.first() == Some(&node) && f.time.as_nanos() <= end_ns);
    for f in mine {
        let t = f.time.as_nanos();
        drain(&mut pending, t, |tt, c| {
            change(&mut clocks, tt, &mut scheduled(c, tt));
        });
        match f.fault {
            Fault::ClockStep { delta_ns, .. } => {
                change(&mut clocks, t, &mut scheduled(Change::Step(delta_ns), t));
            }
            Fault::ClockSlew {
                delta_ns, rate_ppm, ..
            } => {
                let mut slew_end = f.time;
                change(&mut clocks, t, &mut |c| {
                    slew_end = c.start_slew(f.time, delta_ns, rate_ppm);
                });
                pending.push((slew_end.as_nanos(), seq, Change::EndSlew));
                seq += 1;
            }
            Fault::ClockDrift { drift_ppm, .. } => {
                change(&mut clocks, t, &mut |c| c.set_drift(f.time, drift_ppm));
            }
            Fault::ClockStrobe {
                delta_ns,
                period,
                duration,
                ..
            } => {
                // As the world does: a step at the start and at every whole period before the
                // end, alternately away and back, and a step back at the end if left off.
                let stop = t.saturating_add(duration.as_nanos());
                let (mut at, mut off) = (t, false);
                while at < stop {
                    let delta = if off { -delta_ns } else { delta_ns };
                    pending.push((at, seq, Change::Step(delta)));
                    seq += 1;
                    off = !off;
                    at = at.saturating_add(period.as_nanos().max(1));
                }
                if off {
                    pending.push((stop, seq, Change::Step(-delta_ns)));
                    seq += 1;
                }
            }
            _ => {}
        }
    }
    drain(&mut pending, end_ns, |tt, c| {
        change(&mut clocks, tt, &mut scheduled(c, tt));
    });
    clocks
}

/// How far `node`'s wall clock falls behind where it stood: its highest offset from true time
/// up to `until_ns`, less its lowest from then to `end_ns`, in nanoseconds (0 when it never
/// falls). Replayed from the fault log as the timeline's clock lines are, so a step back
/// counts net of the forward steps after it before `until_ns`, and a strobe that ends before
/// then counts nothing.
pub(crate) fn wall_fall(
    node: NodeId,
    initial: &Clocks,
    log: &[AppliedFault],
    until_ns: u64,
    end_ns: u64,
) -> u64 {
    let offset =
        |c: &Clocks, t: u64| i128::from(c.wall(Time::from_nanos(t)).as_nanos()) - i128::from(t);
    let (mut high, mut low) = (i128::MIN, i128::MAX);
    // Offsets are linear within a segment: its ends bound it. A segment runs from a change
    // (or zero) to the next change (or the end), on the clocks just before that next change.
    let mut bound = |clocks: &Clocks, start: u64, next: u64| {
        let next = next.max(start);
        if start <= until_ns {
            let to = next.min(until_ns);
            high = high.max(offset(clocks, start)).max(offset(clocks, to));
        }
        if next >= until_ns {
            let from = start.max(until_ns);
            low = low.min(offset(clocks, from)).min(offset(clocks, next));
        }
    };
    let mut start = 0;
    let last = replay(node, initial, log, end_ns, |t, clocks, side| match side {
        Side::Before => bound(clocks, start, t),
        Side::After => start = t,
    });
    bound(&last, start, end_ns);
    u64::try_from(high.saturating_sub(low)).unwrap_or(0)
}

/// The earliest true time, not before `from_ns`, at which the node's `kind` clock reads at
/// least `local`; `None` if not before the end of the last segment's reach (never).
fn when(segments: &Segments, kind: ClockKind, local: i64, from_ns: u64) -> u64 {
    for (i, (start, clocks)) in segments.iter().enumerate() {
        let next = segments.get(i + 1).map_or(u64::MAX, |s| s.0);
        if next <= from_ns {
            continue;
        }
        let now = Time::from_nanos((*start).max(from_ns));
        let t = clocks
            .when(kind, LocalTime::from_nanos(local), now)
            .as_nanos();
        if t < next {
            return t;
        }
    }
    u64::MAX
}

/// What a server granted, from its observations of who holds the lock: from each grant to
/// the next change (a new holder, a release), the deadline it gave the grant on its own
/// clock (renewals move it), its crash, or the end of the run, whichever came first. Members
/// of a replicated service apply the same changes at different times, so their lanes show
/// each one's lag, and a cut-off member's stale view.
fn server_grants(
    lane: usize,
    observations: &[Record<Observation>],
    segments: &Segments,
    log: &[AppliedFault],
    end_ns: u64,
) -> Vec<Granted> {
    let node = NodeId(lane as u32);
    let expiry =
        |(clock, at): (ClockKind, LocalTime), from: u64| when(segments, clock, at.as_nanos(), from);
    let crashes = crash_times(node, log);
    let mut grants = Vec::new();
    // The grant open on the server: (holder, since, expiry in true time).
    let mut open: Option<(usize, u64, u64)> = None;
    let close = |open: &mut Option<(usize, u64, u64)>, at: u64, how: &str, out: &mut Vec<_>| {
        if let Some((holder, from_ns, expires)) = open.take() {
            let crash = crashes.iter().copied().find(|&c| c >= from_ns);
            let (mut to_ns, mut detail) = (at, how);
            if expires < to_ns {
                (to_ns, detail) = (expires, "expired");
            }
            if let Some(c) = crash.filter(|&c| c < to_ns) {
                (to_ns, detail) = (c, "server crashed");
            }
            out.push(Granted {
                lane,
                holder,
                from_ns,
                to_ns: to_ns.min(end_ns),
                detail: detail.to_string(),
            });
        }
    };
    let views = observations.iter().filter_map(|o| match o.event {
        Observation::Holder(view) if o.node == node => Some((o.time.as_nanos(), view)),
        _ => None,
    });
    for (t, view) in views {
        match view {
            HolderView::Granted { client, expires } => {
                close(&mut open, t, "passed on", &mut grants);
                let expires = expires.map_or(u64::MAX, |e| expiry(e, t));
                open = Some((client.index(), t, expires));
            }
            HolderView::Extended { expires } => {
                if let Some(g) = open.as_mut() {
                    g.2 = expiry(expires, t);
                }
            }
            HolderView::Free => close(&mut open, t, "released", &mut grants),
        }
    }
    close(&mut open, end_ns, "held at the end", &mut grants);
    grants
}

/// When `node` crashed, in true time: a server's grants end there.
fn crash_times(node: NodeId, log: &[AppliedFault]) -> Vec<u64> {
    log.iter()
        .filter(|f| matches!(f.fault, Fault::Crash { node: n, .. } if n == node))
        .map(|f| f.time.as_nanos())
        .collect()
}

/// Applies the pending changes due at or before `t`, in (time, order) order.
fn drain(pending: &mut Vec<(u64, usize, Change)>, t: u64, mut apply: impl FnMut(u64, Change)) {
    pending.sort_by_key(|&(at, seq, _)| (at, seq));
    let due = pending.iter().take_while(|&&(at, _, _)| at <= t).count();
    for (at, _, change) in pending.drain(..due) {
        apply(at, change);
    }
}
