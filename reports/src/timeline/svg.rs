//! The painter: a [`Timeline`] drawn as one self-contained SVG document (what it shows and
//! promises is in `mod.rs`). The data model knows nothing of classes, colours or pixels; they
//! are all here.

use std::fmt::Write as _;

use lockstep_check::{ExitReason, OpKind, OpOutcome};

use super::escape;
use super::model::{ClockPoint, FaultMark, LaneKind, Op, OverlapSpan, Timeline};
use crate::format::{offset, plural, trimmed, true_time};

/// The CSS classes and labels of the model's kinds.
impl LaneKind {
    fn class(self) -> &'static str {
        match self {
            LaneKind::Server => "server",
            LaneKind::Coordinator => "coordinator",
            LaneKind::Storage => "storage",
            LaneKind::Client => "client",
            LaneKind::Other => "other",
        }
    }
}

impl FaultMark {
    fn class(self) -> &'static str {
        match self {
            FaultMark::Partition => "fault-partition",
            FaultMark::Pause => "fault-pause",
            FaultMark::Crash => "fault-crash",
            FaultMark::Terminate => "fault-terminate",
            FaultMark::ClockStep => "fault-clock-step",
            FaultMark::ClockSlew => "fault-clock-slew",
            FaultMark::ClockDrift => "fault-clock-drift",
            FaultMark::ClockStrobe => "fault-clock-strobe",
            FaultMark::Delay => "fault-delay",
            FaultMark::Degrade => "fault-degrade",
        }
    }

    /// Instants are drawn as markers, the rest as shaded spans.
    fn is_instant(self) -> bool {
        matches!(
            self,
            FaultMark::ClockStep | FaultMark::ClockSlew | FaultMark::ClockDrift
        )
    }

    fn label(self) -> &'static str {
        match self {
            FaultMark::Partition => "partition",
            FaultMark::Pause => "pause",
            FaultMark::Crash => "crash",
            FaultMark::Terminate => "terminate (SIGTERM to the kill)",
            FaultMark::ClockStep => "clock step",
            FaultMark::ClockSlew => "clock slew",
            FaultMark::ClockDrift => "clock drift",
            FaultMark::ClockStrobe => "clock strobe",
            FaultMark::Delay => "delay",
            FaultMark::Degrade => "degrade",
        }
    }
}

/// A pixel coordinate with one decimal: fixed formatting keeps the bytes stable.
fn px(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    // `-0.0` would print as `-0.0`.
    let r = if r == 0.0 { 0.0 } else { r };
    format!("{r:.1}")
}

/// A tick step of 1, 2 or 5 times a power of ten, giving at most about `max_ticks` ticks.
fn tick_step(span: u64, max_ticks: u64) -> u64 {
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = unit.saturating_mul(m);
            if span / step <= max_ticks {
                return step;
            }
        }
        unit = unit.saturating_mul(10);
    }
}

/// A tick label at time `t` for ticks `step` apart: seconds for steps of 100 ms or more, ms
/// for steps of 1 µs or more (at most three decimals either way).
fn tick_label(t: u64, step: u64) -> String {
    if step >= 100_000_000 {
        trimmed(t, 1_000_000_000, "s")
    } else if step >= 1_000 {
        trimmed(t, 1_000_000, "ms")
    } else {
        trimmed(t, 1_000, "µs")
    }
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 24.0;
const LANE_H: f64 = 30.0;
const CLOCK_H: f64 = 150.0;

const STYLE: &str = "\
text{font-family:sans-serif;font-size:11px;fill:#222}\
.title{font-size:16px;font-weight:bold}.sub{fill:#555}\
.lane-bg{fill:#fafafa;stroke:#e4e4e4}.lane-bg.client{fill:#f4f8fd}\
.axis line,.grid{stroke:#ccc;stroke-width:1}.axis text{fill:#555}\
.held{fill:#4a90d9;stroke:#1f5f9f;stroke-width:0.5}\
.granted{fill:#7cb87c;fill-opacity:0.8;stroke:#fff;stroke-width:0.5}\
.overlap{fill:#ff2d2d;fill-opacity:0.18;stroke:#d00;stroke-width:1.5;stroke-dasharray:4 2}\
.op-accepted{fill:#2a8a2a;stroke:#fff;stroke-width:0.5}\
.op-rejected{fill:#fff;stroke:#c00;stroke-width:1.5}\
.op-stale{fill:#d00;stroke:#000;stroke-width:1.5}\
.op-lost{fill:none;stroke:#d00;stroke-width:2}\
.op-storage{stroke:#2a8a2a;stroke-width:1}.op-storage.rejected{stroke:#c00}\
.op-storage.stale{stroke:#d00;stroke-width:3}\
.fault-pause{fill:#f5a623;fill-opacity:0.35}\
.fault-crash{fill:#333;fill-opacity:0.35}\
.fault-terminate{fill:#333;fill-opacity:0.15}\
.fault-partition{fill:url(#hatch)}\
.fault-delay{fill:#b07cd8;fill-opacity:0.25}\
.fault-degrade{fill:#b07cd8;fill-opacity:0.15}\
.fault-clock-strobe{fill:#17becf;fill-opacity:0.2}\
.fault-clock-step,.fault-clock-slew,.fault-clock-drift{fill:#17becf;stroke:#0b6f7a;stroke-width:1}\
.clock-wall{fill:none;stroke-width:1.5}.clock-mono{fill:none;stroke-width:1;stroke-dasharray:3 2}\
.zero{stroke:#999;stroke-width:1}.note{fill:#555}\
.fault-label{font-size:8px;fill:#7a4a00}.granted-label{font-size:10px;fill:#fff}";

/// Draws `t` as a standalone SVG document (also fit to inline in HTML).
pub fn svg(t: &Timeline) -> String {
    let end = t.end_ns.max(1);
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |ns: u64| LEFT + ns.min(end) as f64 * plot_w / end as f64;
    let lanes_top = 92.0;
    let lane_y = |l: usize| lanes_top + l as f64 * LANE_H;
    let lanes_bottom = lane_y(t.lanes.len());
    let clock_top = lanes_bottom + 56.0;
    let clock_bottom = clock_top + CLOCK_H;
    let notes_top = clock_bottom + 54.0;
    let height = notes_top + 16.0 * (t.notes.len() as f64 + 1.0) + 8.0;

    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{w}\" \
         height=\"{h}\" viewBox=\"0 0 {w} {h}\">",
        w = px(WIDTH),
        h = px(height)
    );
    let _ = write!(out, "<style>{STYLE}</style>");
    out.push_str(
        "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#d0021b\" \
         fill-opacity=\"0.08\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d0021b\" \
         stroke-width=\"2\" stroke-opacity=\"0.45\"/></pattern></defs>",
    );
    out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>");
    let _ = write!(
        out,
        "<text class=\"title\" x=\"12\" y=\"22\">{}</text>\
         <text class=\"sub\" x=\"12\" y=\"40\">{}</text>",
        escape(&t.title),
        escape(&t.subtitle)
    );
    legend(&mut out, 58.0);

    // Lanes and the time axis.
    out.push_str("<g class=\"lanes\">");
    for (i, lane) in t.lanes.iter().enumerate() {
        let _ = write!(
            out,
            "<rect class=\"lane-bg {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\
             <text class=\"lane-name\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            lane.kind.class(),
            px(LEFT),
            px(lane_y(i)),
            px(plot_w),
            px(LANE_H),
            px(LEFT - 8.0),
            px(lane_y(i) + LANE_H / 2.0 + 4.0),
            escape(&lane.name)
        );
    }
    out.push_str("</g>");
    time_axis(&mut out, end, &x, lanes_top, lanes_bottom);

    // Faults under everything else on the lanes.
    out.push_str("<g class=\"faults\">");
    for f in &t.faults {
        for &l in &f.lanes {
            if l >= t.lanes.len() {
                continue;
            }
            let title = format!(
                "{}: {} at {}",
                f.kind.label(),
                f.detail,
                true_time(f.from_ns)
            );
            if f.kind.is_instant() {
                let (cx, y) = (x(f.from_ns), lane_y(l) + 4.0);
                let _ = write!(
                    out,
                    "<path class=\"{}\" d=\"M{} {}l-4 -4h8z\"><title>{}</title></path>",
                    f.kind.class(),
                    px(cx),
                    px(y + 4.0),
                    escape(&title)
                );
            } else {
                let (x0, x1) = (x(f.from_ns), x(f.to_ns.max(f.from_ns)));
                let _ = write!(
                    out,
                    "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">\
                     <title>{} until {}</title></rect>",
                    f.kind.class(),
                    px(x0),
                    px(lane_y(l) + 1.0),
                    px((x1 - x0).max(1.0)),
                    px(LANE_H - 2.0),
                    escape(&title),
                    true_time(f.to_ns)
                );
                // A wide span says what it is in the lane's top margin.
                if x1 - x0 >= 60.0 {
                    let _ = write!(
                        out,
                        "<text class=\"fault-label\" x=\"{}\" y=\"{}\">{} {}</text>",
                        px(x0 + 3.0),
                        px(lane_y(l) + 7.0),
                        f.kind.label(),
                        offset(i64::try_from(f.to_ns - f.from_ns).unwrap_or(i64::MAX))
                            .trim_start_matches('+')
                    );
                }
            }
        }
    }
    out.push_str("</g>");

    // What servers granted, coloured by holder (a style, so that it beats the class's fill),
    // named when there is room.
    out.push_str("<g class=\"grants\">");
    for g in &t.granted {
        let (x0, x1) = (x(g.from_ns), x(g.to_ns.max(g.from_ns)));
        let holder = t.lanes.get(g.holder).map_or("?", |l| l.name.as_str());
        let _ = write!(
            out,
            "<rect class=\"granted\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" \
             style=\"fill:{}\"><title>granted to {} from {} to {} ({})</title></rect>",
            px(x0),
            px(lane_y(g.lane) + 6.0),
            px((x1 - x0).max(1.0)),
            px(LANE_H - 12.0),
            PALETTE[g.holder % PALETTE.len()],
            escape(holder),
            true_time(g.from_ns),
            true_time(g.to_ns),
            escape(&g.detail)
        );
        if x1 - x0 >= 8.0 + 6.0 * holder.chars().count() as f64 {
            let _ = write!(
                out,
                "<text class=\"granted-label\" x=\"{}\" y=\"{}\">{}</text>",
                px(x0 + 3.0),
                px(lane_y(g.lane) + LANE_H / 2.0 + 3.5),
                escape(holder)
            );
        }
    }
    out.push_str("</g>");

    // What clients believed they held.
    out.push_str("<g class=\"beliefs\">");
    for h in &t.held {
        let (x0, x1) = (x(h.from_ns), x(h.to_ns.max(h.from_ns)));
        let token = h
            .token
            .map_or("no token".to_string(), |t| format!("token {t}"));
        let exit = match h.exit {
            Some(ExitReason::Released) => "released",
            Some(ExitReason::Lost) => "lost",
            Some(ExitReason::Abandoned) => "abandoned",
            Some(ExitReason::Crashed) => "crashed",
            Some(ExitReason::Terminated) => "released on SIGTERM",
            None => "still held at the end",
        };
        let name = t.lanes.get(h.lane).map_or("?", |l| l.name.as_str());
        let _ = write!(
            out,
            "<rect class=\"held\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">\
             <title>{} believes it holds grant #{} ({}) from {} to {}, {}</title></rect>",
            px(x0),
            px(lane_y(h.lane) + 7.0),
            px((x1 - x0).max(1.0)),
            px(LANE_H - 14.0),
            escape(name),
            h.grant.seq,
            token,
            true_time(h.from_ns),
            true_time(h.to_ns),
            exit
        );
    }
    out.push_str("</g>");

    // Overlaps: a frame across both holders' lanes, one per run of overlapping examples.
    out.push_str("<g class=\"overlaps\">");
    let name = |l: usize| t.lanes.get(l).map_or("?", |l| l.name.as_str());
    for band in overlap_bands(t, end / plot_w as u64) {
        let (x0, x1) = (x(band.from_ns), x(band.to_ns.max(band.from_ns)));
        let mut title = String::new();
        for o in band.pairs.iter().take(5) {
            let _ = write!(
                title,
                "2 holders: {} #{} and {} #{} from {} to {}. ",
                name(o.first.client.0 as usize),
                o.first.seq,
                name(o.second.client.0 as usize),
                o.second.seq,
                true_time(o.from_ns),
                true_time(o.to_ns)
            );
        }
        if band.pairs.len() > 5 {
            let _ = write!(title, "And {} more pairs.", band.pairs.len() - 5);
        }
        let _ = write!(
            out,
            "<rect class=\"overlap\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">\
             <title>{}</title></rect>",
            px(x0),
            px(lane_y(band.top) + 2.0),
            px((x1 - x0).max(2.0)),
            px(lane_y(band.bottom) - lane_y(band.top) + LANE_H - 4.0),
            escape(title.trim_end())
        );
    }
    out.push_str("</g>");

    let merged = draw_ops(&mut out, t, &x, &lane_y);

    clock_chart(&mut out, t, &x, clock_top, clock_bottom, end);

    let mut notes = t.notes.clone();
    if merged.0 > 0 {
        notes.push(format!(
            "{} storage operations closer than a pixel are drawn as {} mark{} (hover for counts).",
            merged.0,
            merged.1,
            plural(merged.1)
        ));
    }
    for (i, note) in notes.iter().enumerate() {
        let _ = write!(
            out,
            "<text class=\"note\" x=\"12\" y=\"{}\">{}</text>",
            px(notes_top + 16.0 * i as f64),
            escape(note)
        );
    }
    out.push_str("</svg>");
    out
}

/// Overlap examples of one pair of lanes that overlap in time (or lie closer than `slack_ns`),
/// drawn as one frame.
struct Band<'a> {
    top: usize,
    bottom: usize,
    from_ns: u64,
    to_ns: u64,
    pairs: Vec<&'a OverlapSpan>,
}

fn overlap_bands(t: &Timeline, slack_ns: u64) -> Vec<Band<'_>> {
    let mut sorted: Vec<&OverlapSpan> = t.overlaps.iter().collect();
    let lanes = |o: &OverlapSpan| {
        let (a, b) = (o.first.client.0 as usize, o.second.client.0 as usize);
        (a.min(b), a.max(b))
    };
    sorted.sort_by_key(|o| (lanes(o), o.from_ns, o.to_ns));
    let mut bands: Vec<Band<'_>> = Vec::new();
    for o in sorted {
        let (top, bottom) = lanes(o);
        match bands.last_mut() {
            Some(b)
                if (b.top, b.bottom) == (top, bottom)
                    && o.from_ns <= b.to_ns.saturating_add(slack_ns) =>
            {
                b.to_ns = b.to_ns.max(o.to_ns);
                b.pairs.push(o);
            }
            _ => bands.push(Band {
                top,
                bottom,
                from_ns: o.from_ns,
                to_ns: o.to_ns,
                pairs: vec![o],
            }),
        }
    }
    bands
}

fn legend(out: &mut String, y: f64) {
    out.push_str("<g class=\"legend\">");
    let items: [(&str, &str); 11] = [
        ("held", "client believes it holds"),
        ("granted", "server granted"),
        ("overlap", "two holders"),
        ("op-accepted", "op accepted"),
        ("op-rejected", "op rejected"),
        ("op-stale", "stale op accepted"),
        ("op-lost", "lost update"),
        ("fault-pause", "pause"),
        ("fault-crash", "crash"),
        ("fault-partition", "partition"),
        ("fault-delay", "delay/degrade"),
    ];
    let mut x = 12.0;
    for (class, label) in items {
        let shape = match class {
            "op-accepted" | "op-stale" => format!(
                "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"4\"/>",
                px(x + 5.0),
                px(y)
            ),
            "op-rejected" => format!(
                "<path class=\"{class}\" d=\"M{} {}l4 4l-4 4l-4 -4z\"/>",
                px(x + 5.0),
                px(y - 4.0)
            ),
            "op-lost" => format!(
                "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"6\"/>",
                px(x + 5.0),
                px(y)
            ),
            _ => format!(
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"12\" height=\"10\"/>",
                px(x),
                px(y - 5.0)
            ),
        };
        out.push_str(&shape);
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\">{label}</text>",
            px(x + 16.0),
            px(y + 4.0)
        );
        x += 22.0 + 6.2 * label.len() as f64;
    }
    let _ = write!(
        out,
        "<path class=\"fault-clock-step\" d=\"M{} {}l-4 -4h8z\"/><text x=\"{}\" y=\"{}\">\
         clock step/slew/drift</text>",
        px(x + 5.0),
        px(y + 3.0),
        px(x + 14.0),
        px(y + 4.0)
    );
    out.push_str("</g>");
}

fn time_axis(out: &mut String, end: u64, x: &dyn Fn(u64) -> f64, top: f64, bottom: f64) {
    let step = tick_step(end, 12);
    out.push_str("<g class=\"axis\">");
    let mut t = 0;
    while t <= end {
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
             <text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(top - 4.0),
            px(bottom),
            px(top - 8.0),
            tick_label(t, step),
            x = px(x(t)),
        );
        t = match t.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">true time</text>",
        px(LEFT - 8.0),
        px(top - 8.0)
    );
    out.push_str("</g>");
}

/// One drawn op mark: possibly several ops closer than a pixel.
struct Mark<'a> {
    x: f64,
    first: &'a Op,
    count: usize,
}

fn op_class(op: &Op) -> &'static str {
    match (op.outcome, op.stale) {
        (OpOutcome::Rejected, _) => "op-rejected",
        (OpOutcome::Accepted, true) => "op-stale",
        (OpOutcome::Accepted, false) => "op-accepted",
    }
}

/// Draws the op marks on their clients' lanes (and ticks on the storage lane), merging
/// ordinary marks of one lane and class closer than a pixel. Returns (ops merged, marks they
/// became).
fn draw_ops(
    out: &mut String,
    t: &Timeline,
    x: &dyn Fn(u64) -> f64,
    lane_y: &dyn Fn(usize) -> f64,
) -> (usize, usize) {
    let mut marks: Vec<Mark<'_>> = Vec::new();
    let (mut merged_ops, mut merged_marks) = (0, 0);
    for op in &t.ops {
        let ox = x(op.time_ns);
        let special = op.stale || op.lost_update;
        // The ops are in time order, so a mergeable mark is among the last few of its lane.
        let near = marks.iter_mut().rev().take(64).find(|m| {
            !special
                && !m.first.stale
                && !m.first.lost_update
                && m.first.lane == op.lane
                && op_class(m.first) == op_class(op)
                && ox - m.x < 1.0
        });
        match near {
            Some(m) => {
                if m.count == 1 {
                    merged_marks += 1;
                    merged_ops += 1;
                }
                m.count += 1;
                merged_ops += 1;
            }
            None => marks.push(Mark {
                x: ox,
                first: op,
                count: 1,
            }),
        }
    }
    out.push_str("<g class=\"ops\">");
    for m in &marks {
        let op = m.first;
        let name = t.lanes.get(op.lane).map_or("?", |l| l.name.as_str());
        let what = match op.kind {
            OpKind::Read { value } => format!("read {value}"),
            OpKind::Write { value, base } => format!("write {value} (from {base})"),
            OpKind::Claim => "claim".to_string(),
        };
        let outcome = match op.outcome {
            OpOutcome::Accepted => "accepted",
            OpOutcome::Rejected => "rejected",
        };
        let token = op
            .token
            .map_or("no token".to_string(), |t| format!("token {t}"));
        let mut title = format!(
            "{} op #{} {}, grant #{}, {}: {} at {}",
            name,
            op.grant.seq,
            what,
            op.grant.seq,
            token,
            outcome,
            true_time(op.time_ns)
        );
        if op.stale {
            title.push_str(" (STALE: after a later grant's op)");
        }
        if op.lost_update {
            title.push_str(" (LOST UPDATE: overwrote a write it never saw)");
        }
        if m.count > 1 {
            title = format!("{} ops from {}; first: {}", m.count, name, title);
        }
        let cy = lane_y(op.lane) + LANE_H / 2.0;
        let class = op_class(op);
        let shape = if op.outcome == OpOutcome::Rejected {
            format!(
                "<path class=\"{class}\" d=\"M{} {}l4 4l-4 4l-4 -4z\">",
                px(m.x),
                px(cy - 4.0)
            )
        } else {
            let r = if op.stale { 5.0 } else { 3.5 };
            format!(
                "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\">",
                px(m.x),
                px(cy),
                px(r)
            )
        };
        out.push_str(&shape);
        let _ = write!(out, "<title>{}</title>", escape(&title));
        out.push_str(if op.outcome == OpOutcome::Rejected {
            "</path>"
        } else {
            "</circle>"
        });
        if op.lost_update {
            let _ = write!(
                out,
                "<circle class=\"op-lost\" cx=\"{}\" cy=\"{}\" r=\"8\"><title>{}</title></circle>",
                px(m.x),
                px(cy),
                escape(&title)
            );
        }
        if let Some(s) = t.storage_lane {
            let extra = match (op.outcome, op.stale) {
                (OpOutcome::Rejected, _) => " rejected",
                (_, true) => " stale",
                _ => "",
            };
            let sy = lane_y(s);
            let _ = write!(
                out,
                "<line class=\"op-storage{extra}\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                px(sy + 6.0),
                px(sy + LANE_H - 6.0),
                x = px(m.x)
            );
        }
    }
    out.push_str("</g>");
    (merged_ops, merged_marks)
}

fn clock_chart(
    out: &mut String,
    t: &Timeline,
    x: &dyn Fn(u64) -> f64,
    top: f64,
    bottom: f64,
    end: u64,
) {
    let values = t
        .clocks
        .iter()
        .flat_map(|s| &s.points)
        .flat_map(|p| [p.wall_offset_ns, p.mono_offset_ns]);
    let (lo, hi) = values.fold((0i64, 0i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // A flat chart still gets a scale: ±1 ms around zero.
    let (lo, hi) = if lo == hi {
        (-1_000_000, 1_000_000)
    } else {
        let pad = (hi - lo) / 10;
        (lo - pad, hi + pad)
    };
    let span = (hi - lo) as f64;
    let y = |v: i64| bottom - (v - lo) as f64 * (bottom - top) / span;
    out.push_str("<g class=\"clocks\">");
    let _ = write!(
        out,
        "<text x=\"12\" y=\"{}\" font-weight=\"bold\">clock offset from true time \
         (solid: wall clock, dashed: monotonic drift)</text>",
        px(top - 22.0)
    );
    let _ = write!(
        out,
        "<rect class=\"lane-bg\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        px(LEFT),
        px(top),
        px(WIDTH - LEFT - RIGHT),
        px(bottom - top)
    );
    // Value ticks.
    let step = tick_step(hi.abs_diff(lo), 5) as i64;
    let mut v = lo.div_euclid(step) * step + if lo.rem_euclid(step) == 0 { 0 } else { step };
    while v <= hi {
        let class = if v == 0 { "zero" } else { "grid" };
        let _ = write!(
            out,
            "<line class=\"{class}\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(LEFT),
            px(WIDTH - RIGHT),
            px(LEFT - 6.0),
            px(y(v) + 4.0),
            offset(v),
            y = px(y(v)),
        );
        v += step;
    }
    for s in &t.clocks {
        let colour = PALETTE[s.lane % PALETTE.len()];
        let name = t.lanes.get(s.lane).map_or("?", |l| l.name.as_str());
        for (class, get) in [
            (
                "clock-wall",
                (|p: &ClockPoint| p.wall_offset_ns) as fn(&ClockPoint) -> i64,
            ),
            ("clock-mono", |p: &ClockPoint| p.mono_offset_ns),
        ] {
            let mut points = String::new();
            for p in &s.points {
                let _ = write!(points, "{},{} ", px(x(p.t_ns.min(end))), px(y(get(p))));
            }
            let _ = write!(
                out,
                "<polyline class=\"{class}\" data-node=\"{}\" stroke=\"{colour}\" \
                 points=\"{}\"><title>{} {}</title></polyline>",
                escape(name),
                points.trim_end(),
                escape(name),
                if class == "clock-wall" {
                    "wall clock − true time"
                } else {
                    "monotonic clock drift"
                }
            );
        }
    }
    if t.clocks
        .iter()
        .flat_map(|s| &s.points)
        .all(|p| p.wall_offset_ns == 0 && p.mono_offset_ns == 0)
        && !t.clocks.is_empty()
    {
        let _ = write!(
            out,
            "<text class=\"note\" x=\"{}\" y=\"{}\">every clock agrees with true time \
             throughout (the lines lie on zero)</text>",
            px(LEFT + 8.0),
            px(top + 14.0)
        );
    }
    // Legend: one entry per node.
    let mut lx = LEFT;
    let ly = bottom + 18.0;
    for s in &t.clocks {
        let colour = PALETTE[s.lane % PALETTE.len()];
        let name = t.lanes.get(s.lane).map_or("?", |l| l.name.as_str());
        let last = s.points.last().map_or(0, |p| p.wall_offset_ns);
        let label = format!("{name} ({})", offset(last));
        let _ = write!(
            out,
            "<line class=\"clock-key\" x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" \
             stroke=\"{colour}\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\">{}</text>",
            px(lx),
            px(lx + 14.0),
            px(lx + 18.0),
            px(ly + 4.0),
            escape(&label),
            ly = px(ly),
        );
        lx += 30.0 + 6.2 * label.chars().count() as f64;
        if lx > WIDTH - 150.0 {
            break;
        }
    }
    out.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::model::tests::{history, verdict};

    #[test]
    fn escape_handles_markup_and_quotes() {
        assert_eq!(
            escape("<script>&\"'"),
            "&lt;script&gt;&amp;&quot;&#39;".to_string()
        );
        assert_eq!(escape("a\u{1}b"), "a\u{fffd}b");
    }

    #[test]
    fn tick_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(60_000_000_000, 12), 5_000_000_000);
        assert_eq!(tick_step(1_000_000, 12), 100_000);
        assert_eq!(tick_step(7, 12), 1);
        assert_eq!(tick_label(15_000_000_000, 5_000_000_000), "15s");
        assert_eq!(tick_label(1_500_000, 500_000), "1.5ms");
        assert_eq!(tick_label(1_500_000_000, 500_000_000), "1.5s");
    }

    #[test]
    fn pixels_format_with_fixed_precision() {
        assert_eq!(px(-0.01), "0.0");
        assert_eq!(px(12.345), "12.3");
    }

    #[test]
    fn svg_escapes_names_merges_close_ops_and_is_deterministic() {
        let h = history();
        let mut t = Timeline::from_history(&h, &verdict(&h));
        t.title = "<script>&\"'".into();
        let a = svg(&t);
        assert_eq!(a, svg(&t));
        assert!(a.contains("&lt;script&gt;&amp;&quot;&#39;"));
        assert!(a.contains("&lt;c1&gt;") && a.contains("c&amp;2"));
        assert!(!a.contains("<script") && !a.contains("<c1>"));
        assert_eq!(
            a.matches("class=\"op-accepted\"").count(),
            1 + 1,
            "legend + one mark"
        );
        assert!(a.contains("50 storage operations closer than a pixel are drawn as 1 mark "));
        assert!(
            !a.contains("http://") || a.matches("http://").count() == 1,
            "only xmlns"
        );
    }
}
