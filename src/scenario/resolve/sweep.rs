//! `[sweep]`: the axes of a sweep map, their key paths and values.

use super::Resolver;
use crate::scenario::schema::{AxisSection, SweepSection, SweepValueSpec};

/// `[sweep]`: the axes' key paths and values, and the seeds per cell. Whether a key exists and
/// takes a value is the file format's business: `sweepmap::grid` loads every cell to know.
pub(super) fn sweep(
    r: &mut Resolver,
    s: &SweepSection,
    seed: u64,
) -> Option<crate::sweepmap::Sweep> {
    use crate::sweepmap::{DEFAULT_MAP_SEEDS, MAX_MAP_SEEDS, Sweep};
    use lockstep_reports::sweepmap::Measure;
    let seeds = s.seeds.unwrap_or(DEFAULT_MAP_SEEDS);
    if !(1..=MAX_MAP_SEEDS).contains(&seeds) {
        r.problems.push(
            "sweep.seeds",
            format!("must be between 1 and {MAX_MAP_SEEDS}, not {seeds}"),
        );
    } else if let Err(e) = crate::Seeds::range(seed, seeds) {
        r.problems
            .push("sweep.seeds", format!("from scenario.seed: {e}"));
    }
    let x = sweep_axis(r, "x", &s.x);
    let y = s.y.as_ref().and_then(|y| sweep_axis(r, "y", y));
    if let (Some(x), Some(y)) = (&x, &y) {
        if x.key == y.key {
            r.problems
                .push("sweep.y.key", format!("`{}` is already the x axis", y.key));
        }
    }
    let measure = match &s.measure {
        None => Measure::Violations,
        Some(name) => match Measure::ALL.into_iter().find(|m| m.name() == name) {
            Some(m) => m,
            None => {
                let names: Vec<String> = Measure::ALL
                    .iter()
                    .map(|m| format!("`{}`", m.name()))
                    .collect();
                r.problems.push(
                    "sweep.measure",
                    format!("`{name}` is not a measure: use one of {}", names.join(", ")),
                );
                Measure::Violations
            }
        },
    };
    let mut axes: Vec<_> = x.into_iter().collect();
    axes.extend(y);
    (axes.len() == 1 + usize::from(s.y.is_some())).then_some(Sweep {
        axes,
        seeds,
        measure,
    })
}

fn sweep_axis(r: &mut Resolver, name: &str, a: &AxisSection) -> Option<crate::sweepmap::Axis> {
    use crate::sweepmap::{Axis, MAX_AXIS_VALUES, parse_key_path};
    let p = format!("sweep.{name}");
    let path = parse_key_path(&a.key)
        .map_err(|e| r.problems.push(format!("{p}.key"), e))
        .ok();
    let values = match (&a.values, &a.from, &a.to, &a.step) {
        (Some(values), None, None, None) => {
            if values.is_empty() {
                r.problems
                    .push(format!("{p}.values"), "must list at least one value");
            }
            values.iter().map(sweep_value).collect()
        }
        (None, Some(from), Some(to), Some(step)) => sweep_range(r, &p, from, to, step)?,
        (Some(_), ..) => {
            r.problems.push(
                format!("{p}.values"),
                "give either `values` or `from`, `to` and `step`, not both",
            );
            return None;
        }
        (None, ..) => {
            r.problems.push(
                p,
                "needs `values = [..]`, or a range: `from`, `to` and `step`",
            );
            return None;
        }
    };
    if values.len() > MAX_AXIS_VALUES {
        r.problems.push(
            format!("{p}.values"),
            format!("has {} values; at most {MAX_AXIS_VALUES}", values.len()),
        );
    }
    Some(Axis {
        name: name.to_string(),
        key: a.key.clone(),
        path: path?,
        values,
    })
}

fn sweep_value(v: &SweepValueSpec) -> crate::sweepmap::Value {
    use crate::sweepmap::Value;
    match v {
        SweepValueSpec::Integer(v) => Value::Integer(*v),
        SweepValueSpec::Float(v) => Value::Float(*v),
        SweepValueSpec::Bool(v) => Value::Bool(*v),
        SweepValueSpec::String(v) => Value::String(v.clone()),
    }
}

/// The values `from`, `from + step`, ... up to `to` (included when a step lands on it):
/// integers when all three are integers, floats (rounded to 9 decimals, so 0.1 steps give 0.3
/// and not 0.30000000000000004) otherwise.
fn sweep_range(
    r: &mut Resolver,
    p: &str,
    from: &SweepValueSpec,
    to: &SweepValueSpec,
    step: &SweepValueSpec,
) -> Option<Vec<crate::sweepmap::Value>> {
    use crate::sweepmap::{MAX_AXIS_VALUES, Value};
    use SweepValueSpec::{Float, Integer};
    let number = |r: &mut Resolver, key: &str, v: &SweepValueSpec| match v {
        Integer(i) => Some(*i as f64),
        Float(f) if f.is_finite() => Some(*f),
        _ => {
            r.problems
                .push(format!("{p}.{key}"), "must be a finite number");
            None
        }
    };
    let (f, t, s) = (
        number(r, "from", from),
        number(r, "to", to),
        number(r, "step", step),
    );
    let (f, t, s) = (f?, t?, s?);
    if s == 0.0 || (t - f) * s < 0.0 {
        r.problems.push(
            format!("{p}.step"),
            format!("must be non-zero and lead from {f} to {t}, not {s}"),
        );
        return None;
    }
    let steps = ((t - f) / s * (1.0 + 1e-12)).floor();
    if steps >= MAX_AXIS_VALUES as f64 {
        r.problems.push(
            format!("{p}.step"),
            format!(
                "gives {} values from {f} to {t}; at most {MAX_AXIS_VALUES}",
                steps + 1.0
            ),
        );
        return None;
    }
    let n = steps as i64 + 1;
    Some(match (from, to, step) {
        (Integer(f), Integer(_), Integer(s)) => (0..n)
            .map(|i| Value::Integer(f.saturating_add(i.saturating_mul(*s))))
            .collect(),
        _ => (0..n)
            .map(|i| Value::Float(((f + i as f64 * s) * 1e9).round() / 1e9))
            .collect(),
    })
}
