//! Writing a scenario file back: the original file with its fault list replaced by an explicit
//! [`Schedule`], its chaos profile removed and its seed fixed, so that the file alone replays
//! one run. `lockstep hunt` writes its minimal failing schedule this way.
//!
//! The text is edited with `toml_edit` rather than re-serialised: every key the schedule does
//! not replace keeps its value, its place and its comments (a catalogue file's header explains
//! the failure it shows, which is worth keeping beside the minimal schedule). Only
//! `[scenario] seed`, `seeds` and `duration_ms` change, `[chaos]` and every `[[fault]]` go,
//! and the schedule's faults come in as new `[[fault]]` tables before `[expect]`. A replaced
//! key loses its trailing comment, which spoke of the old value. `[expect]` is kept as given:
//! `lockstep hunt` gives it the name and the expectation of what it found.
//!
//! **Milliseconds are exact.** The loader turns a number of milliseconds `v` into
//! `(v * 1e6).round()` nanoseconds. A whole number of milliseconds is written as an integer;
//! anything else as the `f64` nearest `ns / 1e6`, printed in Rust's shortest round-trip form
//! (what `toml_edit` uses), and checked to read back as the same nanoseconds; a value no `f64`
//! reads back exactly (only beyond about 26 days in nanosecond detail) is an error, not a
//! silent rounding. Finally the text is parsed back and its schedule compared with the one
//! given: a file that would not replay the schedule is never returned.

use std::path::Path;

use lockstep_sim::{Dur, Fault, NodeId, PartitionMode, ScheduledFault, Shape, When};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use super::{ScenarioError, Schedule, Seeds, line_of, parse};

/// The text of a standalone scenario file: `original_text` (the file at `path`) with
/// `[chaos]` and its `[[fault]]` list removed, `schedule`'s faults written as `[[fault]]`
/// tables with node names from `names` (indexed by node id), `[scenario] seed = seed`,
/// `seeds = [seed]` and `duration_ms` the schedule's, and `note` as a comment at the top (one
/// `#` line per line of `note`). Every other key keeps its value and its comments.
///
/// # Errors
/// A [`ScenarioError`] naming `path`: the original is not TOML or has no `[scenario]` table,
/// a fault names a node id outside `names` or a node list the file format cannot express
/// exactly (empty, or not in node order), a time has no exact millisecond form, the seed does
/// not fit a TOML integer, or the written file does not read back as `schedule` (with the
/// loader's own problems when it does not load at all).
pub fn write_scenario(
    original_text: &str,
    path: &Path,
    names: &[String],
    schedule: &Schedule,
    seed: u64,
    note: &str,
) -> Result<String, ScenarioError> {
    let err = |key: &str, message: String| ScenarioError::one(path, key, None, message);
    let mut doc: DocumentMut = original_text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(original_text, s.start));
        ScenarioError::one(path, "", line, e.message().to_string())
    })?;
    doc.remove("chaos");
    doc.remove("fault");
    let toml_seed = i64::try_from(seed).map_err(|_| {
        err(
            "scenario.seed",
            format!("seed {seed} does not fit a TOML integer"),
        )
    })?;
    let duration = ms(schedule.duration.as_nanos()).ok_or_else(|| {
        err(
            "scenario.duration_ms",
            inexact(schedule.duration.as_nanos()),
        )
    })?;
    let scenario = doc
        .get_mut("scenario")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| {
            err(
                "scenario",
                "the original has no [scenario] table".to_string(),
            )
        })?;
    scenario.insert("duration_ms", Item::Value(duration));
    scenario.insert("seed", toml_edit::value(toml_seed));
    scenario.insert("seeds", toml_edit::value(Array::from_iter([toml_seed])));

    let writer = FaultWriter { names };
    let mut faults = ArrayOfTables::new();
    for (i, f) in schedule.faults.iter().enumerate() {
        let table = writer
            .fault(f)
            .map_err(|(key, message)| err(&format!("fault[{i}].{key}"), message))?;
        faults.push(table);
    }
    place_faults(&mut doc, faults);
    let comment: String = note
        .lines()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {l}\n")
            }
        })
        .collect();
    let prefix = doc
        .decor()
        .prefix()
        .and_then(|p| p.as_str())
        .unwrap_or("")
        .to_string();
    doc.decor_mut().set_prefix(format!("{comment}\n{prefix}"));
    let text = doc.to_string();

    let written = parse(&text, path)?;
    let replayed = written.schedule(seed);
    if replayed != *schedule || written.seeds != Seeds::List(vec![seed]) || written.seed != seed {
        let at = replayed
            .faults
            .iter()
            .zip(&schedule.faults)
            .position(|(a, b)| a != b)
            .map_or_else(String::new, |i| format!("fault[{i}]"));
        return Err(err(
            &at,
            format!(
                "the written file does not replay the schedule: it reads back as {replayed:?}, not {schedule:?}"
            ),
        ));
    }
    Ok(text)
}

/// Puts the `[[fault]]` tables before `[expect]` (where the catalogue keeps them), or last
/// when there is no `[expect]`. Tables print in the order of their document positions, so
/// every table from `[expect]` on moves down to make room.
fn place_faults(doc: &mut DocumentMut, mut faults: ArrayOfTables) {
    let count = isize::try_from(faults.len()).expect("a schedule fits in memory");
    let at = match doc
        .get("expect")
        .and_then(Item::as_table)
        .and_then(Table::position)
    {
        Some(expect) => {
            shift_positions(doc.as_table_mut(), expect, count);
            expect
        }
        None => last_position(doc.as_table()) + 1,
    };
    for (i, table) in faults.iter_mut().enumerate() {
        table.set_position(Some(at + isize::try_from(i).expect("counted above")));
    }
    if !faults.is_empty() {
        doc.insert("fault", Item::ArrayOfTables(faults));
    }
}

/// Moves every table at position `from` or later `by` places down, at any depth.
fn shift_positions(table: &mut Table, from: isize, by: isize) {
    for (_, item) in table.iter_mut() {
        let tables: Vec<&mut Table> = match item {
            Item::Table(t) => vec![t],
            Item::ArrayOfTables(a) => a.iter_mut().collect(),
            _ => Vec::new(),
        };
        for t in tables {
            if let Some(p) = t.position().filter(|&p| p >= from) {
                t.set_position(Some(p + by));
            }
            shift_positions(t, from, by);
        }
    }
}

/// The largest table position in the document (0 when there is none).
fn last_position(table: &Table) -> isize {
    let mut last = table.position().unwrap_or(0);
    for (_, item) in table.iter() {
        let tables: Vec<&Table> = match item {
            Item::Table(t) => vec![t],
            Item::ArrayOfTables(a) => a.iter().collect(),
            _ => Vec::new(),
        };
        for t in tables {
            last = last.max(last_position(t));
        }
    }
    last
}

/// Nanoseconds as the value of a `_ms` key that the loader reads back as exactly `ns`:
/// an integer for whole milliseconds, else the nearest `f64` (or a neighbour, should the
/// multiplication round the other way). `None` when no such value exists.
fn ms(ns: impl TryInto<i64>) -> Option<Value> {
    let ns: i64 = ns.try_into().ok()?;
    // What the loader computes: `(v * 1e6).round()`; an integer key is read as `v as f64`.
    let reads = |v: f64| (v * 1e6).round() as i64 == ns;
    if ns % 1_000_000 == 0 {
        let whole = ns / 1_000_000;
        return reads(whole as f64).then(|| Value::from(whole));
    }
    let nearest = ns as f64 / 1e6;
    let step = |v: f64, by: i64| f64::from_bits(v.to_bits().wrapping_add_signed(by));
    [0, 1, -1, 2, -2]
        .into_iter()
        .map(|by| step(nearest, by))
        .find(|&v| reads(v))
        .map(Value::from)
}

fn inexact(ns: impl std::fmt::Display) -> String {
    format!("{ns} ns has no exact form in milliseconds")
}

/// Writes faults in the file's vocabulary (docs/scenarios.md, `[[fault]]`). Errors are
/// `(key path within the fault, message)`.
struct FaultWriter<'a> {
    names: &'a [String],
}

type Written<T> = Result<T, (String, String)>;

impl FaultWriter<'_> {
    fn fault(&self, f: &ScheduledFault) -> Written<Table> {
        let mut table = Table::new();
        match &f.when {
            When::At(t) => {
                let at = ms(t.as_nanos()).ok_or_else(|| ("at_ms".into(), inexact(t.as_nanos())))?;
                table.insert("at_ms", Item::Value(at));
            }
            When::OnMark {
                node,
                mark,
                occurrence,
                before,
            } => {
                let mut on = InlineTable::new();
                on.insert("node", self.name("on.node", *node)?);
                on.insert("mark", mark.as_str().into());
                if *occurrence != 1 {
                    on.insert("occurrence", i64::from(*occurrence).into());
                }
                if let Some(t) = before {
                    let v = ms(t.as_nanos())
                        .ok_or_else(|| ("on.before_ms".into(), inexact(t.as_nanos())))?;
                    on.insert("before_ms", v);
                }
                table.insert("on", toml_edit::value(on));
            }
        }
        let (key, mut action) = self.action(&f.fault)?;
        if let Some(role) = &f.role {
            // An aimed fault names its role where its node would be (the node the fault
            // carries is a placeholder).
            let t = action
                .as_inline_table_mut()
                .expect("an action is an inline table");
            let slot = if t.contains_key("isolate") {
                "isolate"
            } else {
                "node"
            };
            t.insert(slot, role.as_str().into());
        }
        table.insert(key, action);
        Ok(table)
    }

    /// The action's key and value.
    fn action(&self, fault: &Fault) -> Written<(&'static str, Item)> {
        let mut t = InlineTable::new();
        // A new fault kind gets its keys here: the match is exhaustive so that a new variant
        // does not compile until it can be written.
        let key = match fault {
            Fault::Pause { node, duration } => {
                t.insert("node", self.name("pause.node", *node)?);
                opt_ms(&mut t, "pause.for_ms", "for_ms", *duration)?;
                "pause"
            }
            Fault::Freeze { node, duration } => {
                t.insert("node", self.name("freeze.node", *node)?);
                opt_ms(&mut t, "freeze.for_ms", "for_ms", *duration)?;
                "freeze"
            }
            Fault::Resume { node } => {
                t.insert("node", self.name("resume.node", *node)?);
                "resume"
            }
            Fault::Crash {
                node,
                restart_after,
            } => {
                t.insert("node", self.name("crash.node", *node)?);
                let key = "restart_after_ms";
                opt_ms(&mut t, "crash.restart_after_ms", key, *restart_after)?;
                "crash"
            }
            Fault::Terminate { node, grace } => {
                t.insert("node", self.name("terminate.node", *node)?);
                opt_ms(&mut t, "terminate.grace_ms", "grace_ms", Some(*grace))?;
                "terminate"
            }
            Fault::Restart { node } => {
                t.insert("node", self.name("restart.node", *node)?);
                "restart"
            }
            Fault::Partition {
                shape,
                mode,
                duration,
            } => {
                self.shape(&mut t, shape)?;
                let mode = match mode {
                    PartitionMode::Drop => "drop",
                    PartitionMode::Hold => "hold",
                };
                t.insert("mode", mode.into());
                opt_ms(&mut t, "partition.for_ms", "for_ms", *duration)?;
                "partition"
            }
            Fault::Heal => return Ok(("heal", toml_edit::value(true))),
            Fault::ClockStep { node, delta_ns } => {
                t.insert("node", self.name("clock_step.node", *node)?);
                let delta = ms(*delta_ns)
                    .ok_or_else(|| ("clock_step.delta_ms".into(), inexact(delta_ns)))?;
                t.insert("delta_ms", delta);
                "clock_step"
            }
            Fault::ClockSlew {
                node,
                delta_ns,
                rate_ppm,
            } => {
                t.insert("node", self.name("clock_slew.node", *node)?);
                let delta = ms(*delta_ns)
                    .ok_or_else(|| ("clock_slew.delta_ms".into(), inexact(delta_ns)))?;
                t.insert("delta_ms", delta);
                t.insert("rate_ppm", i64::from(*rate_ppm).into());
                "clock_slew"
            }
            Fault::ClockDrift { node, drift_ppm } => {
                t.insert("node", self.name("clock_drift.node", *node)?);
                t.insert("drift_ppm", (*drift_ppm).into());
                "clock_drift"
            }
            Fault::Delay {
                from,
                to,
                extra,
                duration,
            } => {
                t.insert("from", self.names("delay.from", from)?);
                t.insert("to", self.names("delay.to", to)?);
                let extra_ms = ms(extra.as_nanos())
                    .ok_or_else(|| ("delay.extra_ms".into(), inexact(extra.as_nanos())))?;
                t.insert("extra_ms", extra_ms);
                opt_ms(&mut t, "delay.for_ms", "for_ms", *duration)?;
                "delay"
            }
            Fault::Degrade {
                from,
                to,
                loss_ppm,
                duplicate_ppm,
                duration,
            } => {
                t.insert("from", self.names("degrade.from", from)?);
                t.insert("to", self.names("degrade.to", to)?);
                // ppm / 1e6 in shortest form reads back as the same ppm.
                if *loss_ppm > 0 {
                    t.insert("loss", (f64::from(*loss_ppm) / 1e6).into());
                }
                if *duplicate_ppm > 0 {
                    t.insert("duplicate", (f64::from(*duplicate_ppm) / 1e6).into());
                }
                opt_ms(&mut t, "degrade.for_ms", "for_ms", *duration)?;
                "degrade"
            }
            Fault::ClockStrobe {
                node,
                delta_ns,
                period,
                duration,
            } => {
                t.insert("node", self.name("clock_strobe.node", *node)?);
                let delta = ms(*delta_ns)
                    .ok_or_else(|| ("clock_strobe.delta_ms".into(), inexact(delta_ns)))?;
                t.insert("delta_ms", delta);
                opt_ms(&mut t, "clock_strobe.period_ms", "period_ms", Some(*period))?;
                opt_ms(&mut t, "clock_strobe.for_ms", "for_ms", Some(*duration))?;
                "clock_strobe"
            }
        };
        Ok((key, toml_edit::value(t)))
    }

    /// The partition's shape key.
    fn shape(&self, t: &mut InlineTable, shape: &Shape) -> Written<()> {
        match shape {
            Shape::Isolate { node } => {
                t.insert("isolate", self.name("partition.isolate", *node)?);
            }
            Shape::Split { groups } => {
                let mut list = Array::new();
                for (i, g) in groups.iter().enumerate() {
                    list.push(self.list(&format!("partition.groups[{i}]"), g)?);
                }
                t.insert("groups", Value::Array(list));
            }
            Shape::OneWay { from, to } => {
                t.insert("from", self.names("partition.from", from)?);
                t.insert("to", self.names("partition.to", to)?);
            }
            Shape::MajorityMinority { nodes } => {
                let v = self.names("partition.majority_minority", nodes)?;
                t.insert("majority_minority", v);
            }
            Shape::Bridge { nodes } => {
                t.insert("bridge", self.names("partition.bridge", nodes)?);
            }
            Shape::MajoritiesRing { nodes } => {
                let v = self.names("partition.majorities_ring", nodes)?;
                t.insert("majorities_ring", v);
            }
        }
        Ok(())
    }

    fn name(&self, key: &str, node: NodeId) -> Written<Value> {
        match self.names.get(node.index()) {
            Some(name) => Ok(name.as_str().into()),
            None => Err((
                key.to_string(),
                format!(
                    "node id {} has no name (the system has {} nodes)",
                    node.0,
                    self.names.len()
                ),
            )),
        }
    }

    /// A node list as the file writes it: one name alone, several as a list.
    fn names(&self, key: &str, nodes: &[NodeId]) -> Written<Value> {
        match nodes {
            [one] => self.name(key, *one),
            _ => self.list(key, nodes).map(Value::Array),
        }
    }

    /// A node list, always as a list. The loader sorts a list and drops duplicates, and a
    /// random split draws from the list in that order, so only a list already in node order
    /// reads back as itself.
    fn list(&self, key: &str, nodes: &[NodeId]) -> Written<Array> {
        if nodes.is_empty() {
            return Err((key.to_string(), "names no node".to_string()));
        }
        if !nodes.is_sorted_by(|a, b| a < b) {
            return Err((
                key.to_string(),
                format!(
                    "nodes {nodes:?} are not in node order without repeats; a scenario file lists them that way, so it would not replay this fault"
                ),
            ));
        }
        let mut list = Array::new();
        for &n in nodes {
            list.push(self.name(key, n)?);
        }
        Ok(list)
    }
}

/// Inserts `key = <ms>` for a bounded duration; nothing for `None`.
fn opt_ms(t: &mut InlineTable, path: &str, key: &str, d: Option<Dur>) -> Written<()> {
    if let Some(d) = d {
        let v = ms(d.as_nanos()).ok_or_else(|| (path.to_string(), inexact(d.as_nanos())))?;
        t.insert(key, v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ms;

    /// What the loader reads from `key = <value>`: the number as `f64` (an integer too), then
    /// `(v * 1e6).round()` nanoseconds.
    fn read_back(value: &toml_edit::Value) -> i64 {
        let doc: toml::Table = format!("v = {value}").parse().expect("valid TOML");
        let v = match &doc["v"] {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => panic!("not a number: {other}"),
        };
        (v * 1e6).round() as i64
    }

    #[test]
    fn awkward_nanoseconds_read_back_exactly() {
        let awkward = [
            0,
            1,
            -1,
            2,
            999,
            999_999,
            1_000_001,
            123_456_789,
            123_456_789_123,
            -123_456_789_123,
            86_400_000_000_001,
            // Beyond 2^51 ns (26 days) the nearest f64 may read back one off; a neighbour
            // does.
            (1 << 51) + 1,
            (1 << 52) - 1,
            1_000_000_000_000_000_000,
            -1_000_000_000_000_000_000,
        ];
        for ns in awkward {
            let v = ms(ns).unwrap_or_else(|| panic!("{ns} ns has a form"));
            assert_eq!(read_back(&v), ns, "{ns} ns written as {v}");
        }
        assert_eq!(ms(1).expect("1 ns").to_string(), "0.000001");
        assert_eq!(
            ms(-60_000_000_000_i64).expect("whole").to_string(),
            "-60000"
        );
    }

    #[test]
    fn nanosecond_values_up_to_thirteen_days_read_back_exactly() {
        // A fixed linear congruential walk over 0 .. 2^50 ns (13 days) and its negatives.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let ns = (x >> 14) as i64 * if x & 1 == 0 { 1 } else { -1 };
            let v = ms(ns).unwrap_or_else(|| panic!("{ns} ns has a form"));
            assert_eq!(read_back(&v), ns, "{ns} ns written as {v}");
        }
    }

    #[test]
    fn a_value_without_an_exact_form_is_refused() {
        // Near 2^60 ns, f64s are 256 ns apart: most nanosecond values have no form.
        let ns = (1_i64 << 60) + 1;
        assert!(ms(ns).is_none());
        assert!(ms(u64::MAX).is_none(), "beyond i64");
    }
}
