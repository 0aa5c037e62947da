//! `[[fault]]`: when each fault applies and what it does, its nodes resolved.

use lockstep_models::family::{MarkSite, Role};
use lockstep_models::keys::MAX_EVENTS;
use lockstep_models::system::{VALIDITY_CHECKED, WORKLOAD_MARKS};
use lockstep_sim::clock::{MAX_DRIFT_PPM, MAX_SLEW_PPM};
use lockstep_sim::{Dur, Fault, NodeId, PartitionMode, ScheduledFault, Shape, Time, When};

use super::{Aim, Resolver};
use crate::scenario::schema::{
    ClockStrobeSection, FaultSection, ModeName, Names, PartitionSection,
};

/// The most steps one clock strobe may take: each is an event of the world, so a strobe of a
/// nanosecond period over a long run would spend the event bound on nothing else. Jepsen's
/// strobes (period 1 ms to 1 s, up to 32 s) take at most 32,000.
const MAX_STROBE_STEPS: u64 = 1_000_000;

pub(super) fn drift(r: &mut Resolver, path: &str, ppm: i64) -> i64 {
    if ppm.unsigned_abs() > MAX_DRIFT_PPM.unsigned_abs() {
        r.problems.push(
            path,
            format!("must be within ±{MAX_DRIFT_PPM} ppm, not {ppm}"),
        );
        return 0;
    }
    ppm
}

/// The run's bounds, which a fault's time and trigger must fall within.
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    /// `scenario.duration_ms`.
    pub(super) duration: Dur,
    /// `scenario.max_events`.
    pub(super) max_events: u64,
}

/// The faults of `[[fault]]` entry `f` at key path `p`: one, or one per node of a group, or
/// one aimed at a role.
pub(super) fn fault(
    r: &mut Resolver,
    p: &str,
    f: &FaultSection,
    bounds: Bounds,
) -> Vec<ScheduledFault> {
    scheduled(r, p, f, bounds).unwrap_or_default()
}

fn scheduled(
    r: &mut Resolver,
    p: &str,
    f: &FaultSection,
    bounds: Bounds,
) -> Option<Vec<ScheduledFault>> {
    let duration = bounds.duration;
    let when = match (f.at_ms, &f.on) {
        (Some(at), None) => {
            let at = r.ms(&format!("{p}.at_ms"), at);
            if at > duration {
                r.problems.push(
                    format!("{p}.at_ms"),
                    format!(
                        "{} ms is after the end of the run (scenario.duration_ms = {})",
                        at.as_millis(),
                        duration.as_millis()
                    ),
                );
            }
            When::At(Time::from_nanos(at.as_nanos()))
        }
        (None, Some(on)) => {
            let node = r.node(&format!("{p}.on.node"), &on.node);
            if on.mark.trim().is_empty() {
                r.problems.push(format!("{p}.on.mark"), "must name a mark");
            } else if let Some(node) = node {
                reaches(r, &format!("{p}.on.mark"), node, &on.node, &on.mark);
            }
            // An occurrence past the event bound can never be reached.
            let occurrence = r.count(
                &format!("{p}.on.occurrence"),
                u64::from(on.occurrence),
                1,
                MAX_EVENTS,
            );
            if occurrence > bounds.max_events {
                r.problems.push(
                    format!("{p}.on.occurrence"),
                    format!(
                        "occurrence {} can never come: a run handles at most {} events \
                         (scenario.max_events), and each reaches a mark at most once",
                        on.occurrence, bounds.max_events
                    ),
                );
            }
            if on.before_ms == Some(0.0) {
                r.problems.push(
                    format!("{p}.on.before_ms"),
                    "a trigger that lapses at 0 ms never fires; give a later time or leave \
                     before_ms out",
                );
            }
            // A lapse time at or after the end never applies, and is no error: a shrunk
            // run may end before its triggers would have lapsed.
            let before = on
                .before_ms
                .map(|v| Time::ZERO + r.ms(&format!("{p}.on.before_ms"), v));
            When::OnMark {
                node: node?,
                mark: on.mark.clone(),
                occurrence: on.occurrence,
                before,
            }
        }
        (Some(_), Some(_)) => {
            r.problems.push(p, "give either `at_ms` or `on`, not both");
            return None;
        }
        (None, None) => {
            r.problems
                .push(p, "needs a time (`at_ms`) or a trigger (`on`)");
            return None;
        }
    };
    let (fault, aim) = fault_action(r, p, f)?;
    Some(match aim {
        None => vec![ScheduledFault::new(when, fault)],
        Some(Aim::Role(role)) => vec![ScheduledFault::aimed(when, fault, role)],
        Some(Aim::Nodes(nodes)) => nodes
            .into_iter()
            .map(|n| {
                let f = fault.aimed_at(n).expect("a fault on one node");
                ScheduledFault::new(when.clone(), f)
            })
            .collect(),
    })
}

/// Checks that node `node` (named `name`) reaches `mark`; the problem, at `path`, names the
/// marks it does reach and the closest of them when the mark looks misspelt.
fn reaches(r: &mut Resolver, path: &str, node: NodeId, name: &str, mark: &str) {
    let site = match r.roles[node.index()] {
        Role::Client => Some(MarkSite::Client),
        Role::Server => Some(MarkSite::Server),
        Role::Coordinator { .. } | Role::Storage => None,
    };
    let at = |site: MarkSite| -> Vec<&'static str> {
        r.marks
            .iter()
            .filter(|&&(_, s)| s == site)
            .map(|&(m, _)| m)
            .collect()
    };
    let here = site.map(at).unwrap_or_default();
    if here.contains(&mark) {
        return;
    }
    let family = r.family;
    let who = |site: MarkSite| match site {
        MarkSite::Client => "clients",
        MarkSite::Server => "servers",
    };
    // The error's text is cut short and escaped where it is shown.
    let head = format!("`{mark}` is not a mark {name} reaches");
    let message = match site.filter(|_| !here.is_empty()) {
        None => {
            let all: Vec<String> = [MarkSite::Client, MarkSite::Server]
                .into_iter()
                .filter(|&s| !at(s).is_empty())
                .map(|s| format!("{} reach {}", who(s), at(s).join(", ")))
                .collect();
            format!(
                "{head}: {name} reaches no marks ({family} {})",
                all.join("; ")
            )
        }
        Some(site) => {
            let list = format!("{family} {} reach: {}", who(site), here.join(", "));
            let other = match site {
                MarkSite::Client => MarkSite::Server,
                MarkSite::Server => MarkSite::Client,
            };
            if at(other).contains(&mark) {
                format!("{head}: only {} reach it; {list}", who(other))
            } else if mark == VALIDITY_CHECKED
                && site == MarkSite::Client
                && WORKLOAD_MARKS.iter().any(|&(m, _)| m == mark)
            {
                format!(
                    "{head}: clients skip the validity check \
                     (workload.check_validity_before_write = false); {list}"
                )
            } else {
                match closest(mark, &here) {
                    Some(m) => format!("{head} (did you mean `{m}`?); {list}"),
                    None => format!("{head}; {list}"),
                }
            }
        }
    };
    r.problems.push(path, message);
}

/// The mark of `marks` nearest `mark` by edit distance (an adjacent swap counts as one edit),
/// when it is close enough to be a typo: at most two edits, and fewer than half its length.
pub(crate) fn closest<'a>(mark: &str, marks: &[&'a str]) -> Option<&'a str> {
    marks
        .iter()
        .map(|&m| (distance(mark, m), m))
        .filter(|&(d, m)| d <= 2 && 2 * d < m.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, m)| m)
}

/// The optimal string alignment distance between `a` and `b`: insertions, deletions,
/// substitutions and swaps of adjacent characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The action of `[[fault]]` entry `f`, on a placeholder node when it takes one, and whom it
/// aims at then (`None` for a fault on links or on no node).
fn fault_action(r: &mut Resolver, p: &str, f: &FaultSection) -> Option<(Fault, Option<Aim>)> {
    let given: Vec<&str> = [
        ("pause", f.pause.is_some()),
        ("freeze", f.freeze.is_some()),
        ("resume", f.resume.is_some()),
        ("crash", f.crash.is_some()),
        ("terminate", f.terminate.is_some()),
        ("restart", f.restart.is_some()),
        ("partition", f.partition.is_some()),
        ("heal", f.heal.is_some()),
        ("clock_step", f.clock_step.is_some()),
        ("clock_slew", f.clock_slew.is_some()),
        ("clock_drift", f.clock_drift.is_some()),
        ("delay", f.delay.is_some()),
        ("degrade", f.degrade.is_some()),
        ("clock_strobe", f.clock_strobe.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, present)| present.then_some(k))
    .collect();
    if given.len() != 1 {
        let msg = if given.is_empty() {
            "needs one action: pause, freeze, resume, crash, terminate, restart, partition, heal, clock_step, clock_slew, clock_drift, clock_strobe, delay or degrade".to_string()
        } else {
            format!(
                "has {} actions ({}); give one per [[fault]]",
                given.len(),
                given.join(", ")
            )
        };
        r.problems.push(p, msg);
        return None;
    }
    // The node a fault is built on before it is aimed.
    let node = NodeId(0);
    let opt_ms =
        |r: &mut Resolver, path: String, v: Option<f64>| v.map(|v| r.positive_ms(&path, v));
    if let Some(x) = &f.pause {
        let aim = r.aim(&format!("{p}.pause.node"), &x.node, true);
        let duration = opt_ms(r, format!("{p}.pause.for_ms"), x.for_ms);
        return Some((Fault::Pause { node, duration }, Some(aim?)));
    }
    if let Some(x) = &f.freeze {
        let aim = r.aim(&format!("{p}.freeze.node"), &x.node, true);
        let duration = opt_ms(r, format!("{p}.freeze.for_ms"), x.for_ms);
        return Some((Fault::Freeze { node, duration }, Some(aim?)));
    }
    if let Some(x) = &f.resume {
        let aim = r.aim(&format!("{p}.resume.node"), &x.node, true)?;
        return Some((Fault::Resume { node }, Some(aim)));
    }
    if let Some(x) = &f.crash {
        let aim = r.aim(&format!("{p}.crash.node"), &x.node, true);
        let restart_after = x
            .restart_after_ms
            .map(|v| r.ms(&format!("{p}.crash.restart_after_ms"), v));
        let fault = Fault::Crash {
            node,
            restart_after,
        };
        return Some((fault, Some(aim?)));
    }
    if let Some(x) = &f.terminate {
        let aim = r.aim(&format!("{p}.terminate.node"), &x.node, true);
        // Kubernetes' `terminationGracePeriodSeconds` default.
        let grace = x.grace_ms.map_or(Dur::from_secs(30), |v| {
            r.ms(&format!("{p}.terminate.grace_ms"), v)
        });
        return Some((Fault::Terminate { node, grace }, Some(aim?)));
    }
    if let Some(x) = &f.restart {
        let aim = r.aim(&format!("{p}.restart.node"), &x.node, false)?;
        return Some((Fault::Restart { node }, Some(aim)));
    }
    if let Some(x) = &f.partition {
        return partition(r, &format!("{p}.partition"), x);
    }
    if let Some(heal) = f.heal {
        if !heal {
            r.problems.push(format!("{p}.heal"), "write `heal = true`");
        }
        return Some((Fault::Heal, None));
    }
    if let Some(x) = &f.clock_step {
        let aim = r.aim(&format!("{p}.clock_step.node"), &x.node, true);
        let delta_ns = r.signed_ms(&format!("{p}.clock_step.delta_ms"), x.delta_ms);
        return Some((Fault::ClockStep { node, delta_ns }, Some(aim?)));
    }
    if let Some(x) = &f.clock_slew {
        let aim = r.aim(&format!("{p}.clock_slew.node"), &x.node, true);
        let delta_ns = r.signed_ms(&format!("{p}.clock_slew.delta_ms"), x.delta_ms);
        if x.rate_ppm == 0 || i64::from(x.rate_ppm) > MAX_SLEW_PPM {
            r.problems.push(
                format!("{p}.clock_slew.rate_ppm"),
                format!("must be between 1 and {MAX_SLEW_PPM}"),
            );
            return None;
        }
        let fault = Fault::ClockSlew {
            node,
            delta_ns,
            rate_ppm: x.rate_ppm,
        };
        return Some((fault, Some(aim?)));
    }
    if let Some(x) = &f.clock_drift {
        let aim = r.aim(&format!("{p}.clock_drift.node"), &x.node, true);
        let drift_ppm = drift(r, &format!("{p}.clock_drift.drift_ppm"), x.drift_ppm);
        return Some((Fault::ClockDrift { node, drift_ppm }, Some(aim?)));
    }
    if let Some(x) = &f.clock_strobe {
        return clock_strobe(r, &format!("{p}.clock_strobe"), x);
    }
    fault_on_links(r, p, f).map(|fault| (fault, None))
}

/// A `degrade` or a `delay`.
fn fault_on_links(r: &mut Resolver, p: &str, f: &FaultSection) -> Option<Fault> {
    let opt_ms =
        |r: &mut Resolver, path: String, v: Option<f64>| v.map(|v| r.positive_ms(&path, v));
    if let Some(x) = &f.degrade {
        let from = r.nodes(&format!("{p}.degrade.from"), &x.from);
        let to = r.nodes(&format!("{p}.degrade.to"), &x.to);
        let loss_ppm = r.probability(&format!("{p}.degrade.loss"), x.loss);
        let duplicate_ppm = r.probability(&format!("{p}.degrade.duplicate"), x.duplicate);
        if x.loss == 0.0 && x.duplicate == 0.0 {
            r.problems.push(
                format!("{p}.degrade"),
                "changes nothing: give `loss` or `duplicate` above 0",
            );
        }
        let duration = opt_ms(r, format!("{p}.degrade.for_ms"), x.for_ms);
        return Some(Fault::Degrade {
            from,
            to,
            loss_ppm,
            duplicate_ppm,
            duration,
        });
    }
    let x = f.delay.as_ref().expect("one action is given");
    let from = r.nodes(&format!("{p}.delay.from"), &x.from);
    let to = r.nodes(&format!("{p}.delay.to"), &x.to);
    let extra = r.positive_ms(&format!("{p}.delay.extra_ms"), x.extra_ms);
    let duration = opt_ms(r, format!("{p}.delay.for_ms"), x.for_ms);
    Some(Fault::Delay {
        from,
        to,
        extra,
        duration,
    })
}

/// A clock strobe at key path `p`: a non-zero step, a positive period and length, and no more
/// than [`MAX_STROBE_STEPS`] steps.
fn clock_strobe(r: &mut Resolver, p: &str, x: &ClockStrobeSection) -> Option<(Fault, Option<Aim>)> {
    let aim = r.aim(&format!("{p}.node"), &x.node, true);
    let delta_ns = r.signed_ms(&format!("{p}.delta_ms"), x.delta_ms);
    if delta_ns == 0 && x.delta_ms.is_finite() {
        r.problems.push(
            format!("{p}.delta_ms"),
            format!(
                "must not be 0 (at least a nanosecond either way), not {}",
                x.delta_ms
            ),
        );
    }
    // Positive, and still so in whole nanoseconds.
    let period = r.positive_ms(&format!("{p}.period_ms"), x.period_ms);
    let duration = r.positive_ms(&format!("{p}.for_ms"), x.for_ms);
    if period == Dur::ZERO || duration == Dur::ZERO {
        return None; // The problem is noted.
    }
    // Steps at every whole period before the end, plus one back if that count is odd.
    let steps = duration.as_nanos().div_ceil(period.as_nanos());
    let steps = steps + steps % 2;
    if steps > MAX_STROBE_STEPS {
        r.problems.push(
            p,
            format!(
                "takes {steps} steps ({} ms every {} ms); at most {MAX_STROBE_STEPS}: \
                 lengthen period_ms or shorten for_ms",
                x.for_ms, x.period_ms
            ),
        );
        return None;
    }
    let fault = Fault::ClockStrobe {
        node: NodeId(0),
        delta_ns,
        period,
        duration,
    };
    Some((fault, Some(aim?)))
}

fn partition(r: &mut Resolver, p: &str, x: &PartitionSection) -> Option<(Fault, Option<Aim>)> {
    let shapes = [
        x.isolate.is_some(),
        x.groups.is_some(),
        x.from.is_some() || x.to.is_some(),
        x.majority_minority.is_some(),
        x.bridge.is_some(),
        x.majorities_ring.is_some(),
    ];
    if shapes.iter().filter(|&&b| b).count() != 1 {
        r.problems.push(
            p,
            "needs exactly one shape: isolate, groups, from + to (one-way), majority_minority, bridge or majorities_ring",
        );
        return None;
    }
    let at_least = |r: &mut Resolver, path: String, nodes: Vec<NodeId>, n: usize| {
        if nodes.len() < n {
            r.problems
                .push(path, format!("needs at least {n} distinct nodes"));
        }
        nodes
    };
    let mut aim = None;
    let shape = if let Some(name) = &x.isolate {
        // One node, or a role: not a group (cut a group off with `groups`).
        let names = Names(vec![name.clone()]);
        let path = format!("{p}.isolate");
        let node = match r.aim(&path, &names, true)? {
            Aim::Role(role) => {
                aim = Some(Aim::Role(role));
                NodeId(0)
            }
            Aim::Nodes(nodes) if nodes.len() == 1 => nodes[0],
            Aim::Nodes(_) => {
                r.problems.push(
                    path,
                    format!(
                        "`{name}` is a group: isolate one node, or cut the group off with \
                         `groups = [[\"{name}\"], [...]]`"
                    ),
                );
                return None;
            }
        };
        Shape::Isolate { node }
    } else if let Some(groups) = &x.groups {
        let groups: Vec<Vec<NodeId>> = groups
            .iter()
            .enumerate()
            .map(|(i, g)| r.nodes(&format!("{p}.groups[{i}]"), g))
            .collect();
        if groups.len() < 2 {
            r.problems
                .push(format!("{p}.groups"), "needs at least two groups");
        }
        Shape::Split { groups }
    } else if let (Some(from), Some(to)) = (&x.from, &x.to) {
        Shape::OneWay {
            from: r.nodes(&format!("{p}.from"), from),
            to: r.nodes(&format!("{p}.to"), to),
        }
    } else if x.from.is_some() || x.to.is_some() {
        r.problems
            .push(p, "a one-way partition needs both `from` and `to`");
        return None;
    } else if let Some(names) = &x.majority_minority {
        let path = format!("{p}.majority_minority");
        let nodes = r.nodes(&path, names);
        Shape::MajorityMinority {
            nodes: at_least(r, path, nodes, 2),
        }
    } else if let Some(names) = &x.bridge {
        let path = format!("{p}.bridge");
        let nodes = r.nodes(&path, names);
        Shape::Bridge {
            nodes: at_least(r, path, nodes, 3),
        }
    } else {
        let path = format!("{p}.majorities_ring");
        let nodes = r.nodes(&path, x.majorities_ring.as_ref().expect("one shape"));
        Shape::MajoritiesRing {
            nodes: at_least(r, path, nodes, 3),
        }
    };
    let mode = match x.mode {
        ModeName::Drop => PartitionMode::Drop,
        ModeName::Hold => PartitionMode::Hold,
    };
    let duration = x.for_ms.map(|v| r.positive_ms(&format!("{p}.for_ms"), v));
    let fault = Fault::Partition {
        shape,
        mode,
        duration,
    };
    Some((fault, aim))
}

#[cfg(test)]
mod tests {
    use super::{closest, distance};

    #[test]
    fn a_swap_is_one_edit_and_only_close_marks_are_suggested() {
        assert_eq!(distance("validity-chekced", "validity-checked"), 1);
        assert_eq!(distance("granted", "grantde"), 1);
        assert_eq!(distance("", "abc"), 3);
        let marks = ["granted", "read-done", "work-done"];
        assert_eq!(closest("grnted", &marks), Some("granted"));
        assert_eq!(closest("lease-lost", &marks), None);
        assert_eq!(closest("work-don", &marks), Some("work-done"));
    }
}
