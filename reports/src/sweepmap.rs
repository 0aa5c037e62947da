//! A sweep map: a scenario's violation rate over a grid of one or two of its parameters, as
//! plain data (the JSON of `lockstep map --format json`), a terminal table and an SVG drawing.
//!
//! The `lockstep` package fills a [`SweepMap`] in (`lockstep::sweepmap`); this module only
//! renders it. [`svg`] draws two axes as a heat map and one as a bar chart of the rate with its
//! 95% interval. The SVG is self-contained (no ids, no stylesheet, no external reference, so
//! several can be inlined in one HTML page), every piece of user text goes through [`escape`],
//! and equal maps give equal bytes.

use std::fmt::Write as _;

use lockstep_check::Property;
use serde::{Deserialize, Serialize};
use tabled::builder::Builder;
use tabled::settings::Style;

use crate::format::{interval, percent_at_a_glance};

/// The `format` of a map's JSON.
pub const FORMAT: &str = "lockstep-sweepmap/1";

/// A scenario run over a grid of parameter values, with per cell the runs and violations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepMap {
    /// [`FORMAT`].
    pub format: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, as given.
    pub file: String,
    /// The property whose violations are counted.
    pub property: Property,
    /// What each cell shows: its violation rate (the default, left out of the JSON), or a
    /// measured figure ([`Cell::value`]).
    #[serde(default, skip_serializing_if = "Measure::is_violations")]
    pub measure: Measure,
    /// The seeds every cell runs.
    pub seeds: MapSeeds,
    /// The axes: `x`, then `y` when there are two.
    pub axes: Vec<Axis>,
    /// Every cell, `x` varying fastest.
    pub cells: Vec<Cell>,
}

/// What a map's cells show (`[sweep] measure`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// The violation rate of the scenario's property.
    #[default]
    Violations,
    /// Critical sections completed (written and released) per simulated second, over the
    /// cell's runs together.
    Throughput,
    /// The share of the clients' time spent waiting for a lock (from a request to its grant,
    /// give-up, crash or the run's end), over the cell's runs together.
    Waiting,
    /// The 99th percentile of every acquire latency of the cell's runs, in milliseconds.
    AcquireP99,
}

impl Measure {
    /// Every measure, in the order the docs list them.
    pub const ALL: [Measure; 4] = [
        Measure::Violations,
        Measure::Throughput,
        Measure::Waiting,
        Measure::AcquireP99,
    ];

    /// Its name in scenario files and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Violations => "violations",
            Measure::Throughput => "throughput",
            Measure::Waiting => "waiting",
            Measure::AcquireP99 => "acquire-p99",
        }
    }

    /// Whether it is the default, the violation rate.
    pub fn is_violations(&self) -> bool {
        *self == Measure::Violations
    }

    /// What it is, for titles: `throughput (critical sections per simulated second)`.
    pub fn what(self) -> &'static str {
        match self {
            Measure::Violations => "violation rate",
            Measure::Throughput => "throughput (critical sections per simulated second)",
            Measure::Waiting => "share of the clients' time spent waiting for a lock",
            Measure::AcquireP99 => "acquire latency p99",
        }
    }

    /// A value of it as a cell's label: `12.3/s`, `41.5%`, `1.20 s`.
    pub fn label(self, value: f64) -> String {
        match self {
            Measure::Violations | Measure::Waiting => {
                let pct = value * 100.0;
                if pct >= 10.0 || pct == 0.0 {
                    format!("{pct:.0}%")
                } else {
                    format!("{pct:.1}%")
                }
            }
            Measure::Throughput => {
                if value >= 100.0 {
                    format!("{value:.0}/s")
                } else if value >= 10.0 {
                    format!("{value:.1}/s")
                } else {
                    format!("{value:.2}/s")
                }
            }
            Measure::AcquireP99 => {
                if value >= 1_000.0 {
                    format!("{:.1} s", value / 1_000.0)
                } else {
                    format!("{value:.0} ms")
                }
            }
        }
    }
}

/// The seeds of each cell: `count` consecutive seeds from `from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapSeeds {
    /// The first seed.
    pub from: u64,
    /// How many.
    pub count: u64,
}

/// One axis of a map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    /// `x` or `y`.
    pub name: String,
    /// The scenario's key path it sets, such as `model.ttl_ms`.
    pub key: String,
    /// Its values as TOML writes them, in order.
    pub values: Vec<String>,
}

/// One cell of a map: the runs of the scenario with the cell's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Index into the `x` axis's values.
    pub x: usize,
    /// Index into the `y` axis's values, with two axes.
    pub y: Option<usize>,
    /// Runs.
    pub runs: u64,
    /// Runs whose verdict of the property was invalid: the violations.
    pub invalid: u64,
    /// Runs whose verdict was unknown (out of events).
    pub unknown: u64,
    /// `invalid / runs`.
    pub rate: f64,
    /// The rate's 95% Wilson score interval.
    pub ci95: (f64, f64),
    /// Runs with two holders at once.
    pub double_holders: u64,
    /// Runs in which storage accepted a stale op.
    pub stale_accepted: u64,
    /// Runs with a lost update.
    pub lost_updates: u64,
    /// The cell's sweep digest (16 hex digits): equal digests, equal per-seed results.
    pub digest: String,
    /// The cell's measured figures, in a map that measures one ([`SweepMap::measure`]); `None`
    /// (and left out of the JSON) in a violation map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
}

/// What a cell's runs measured together, whichever [`Measure`] colours the map: the runs are
/// the same, so a report can draw the map once per measure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// [`Measure::Throughput`].
    pub throughput_per_s: f64,
    /// [`Measure::Waiting`].
    pub waiting: f64,
    /// [`Measure::AcquireP99`], `None` with no acquisition.
    pub acquire_p99_ms: Option<f64>,
}

impl Cell {
    /// Its figure of `measure`, if measured.
    pub fn value(&self, measure: Measure) -> Option<f64> {
        let f = self.figures?;
        match measure {
            Measure::Violations => Some(self.rate),
            Measure::Throughput => Some(f.throughput_per_s),
            Measure::Waiting => Some(f.waiting),
            Measure::AcquireP99 => f.acquire_p99_ms,
        }
    }
}

impl SweepMap {
    /// The cell at `x` (and `y`), if there is one.
    pub fn cell(&self, x: usize, y: Option<usize>) -> Option<&Cell> {
        self.cells.iter().find(|c| c.x == x && c.y == y)
    }

    /// How far along its scale a cell lies, from 0 to 1: its violation rate, its waiting
    /// share, or its figure over the map's largest (throughput, latency).
    fn level(&self, c: &Cell) -> f64 {
        match self.measure {
            Measure::Violations => c.rate,
            Measure::Waiting => c.value(self.measure).unwrap_or(0.0),
            Measure::Throughput | Measure::AcquireP99 => {
                let top = self.top();
                if top > 0.0 {
                    c.value(self.measure).unwrap_or(0.0) / top
                } else {
                    0.0
                }
            }
        }
    }

    /// The top of the scale: 1 for a rate or share, else the largest figure of any cell.
    fn top(&self) -> f64 {
        match self.measure {
            Measure::Violations | Measure::Waiting => 1.0,
            Measure::Throughput | Measure::AcquireP99 => self
                .cells
                .iter()
                .filter_map(|c| c.value(self.measure))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max),
        }
    }

    /// A cell's label: its violation rate at a glance, or its figure (blank with none).
    fn label(&self, c: &Cell) -> String {
        match (self.measure, c.value(self.measure)) {
            (Measure::Violations, _) => percent_of(c),
            (m, Some(v)) => m.label(v),
            (_, None) => "–".to_string(),
        }
    }

    /// A cell's fill: violations on yellow to red, measured figures on white to blue.
    fn fill(&self, c: &Cell) -> String {
        match self.measure {
            Measure::Violations => colour(c.rate),
            _ => blue(self.level(c)),
        }
    }

    /// What the map shows, for titles: `mutual-exclusion violation rate`.
    fn showing(&self) -> String {
        match self.measure {
            Measure::Violations => format!("{} violation rate", self.property),
            m => m.what().to_string(),
        }
    }

    /// The map as pretty JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a map serialises")
    }

    /// A map from its JSON.
    ///
    /// # Errors
    /// The parse error, or a format other than [`FORMAT`].
    pub fn from_json(text: &str) -> Result<SweepMap, String> {
        let map: SweepMap = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if map.format != FORMAT {
            return Err(format!(
                "format `{}` is not a sweep map ({FORMAT})",
                map.format
            ));
        }
        Ok(map)
    }

    /// A terminal table: the `y` values down (or one row), the `x` values across, the rate of
    /// each cell.
    pub fn table(&self) -> String {
        let mut b = Builder::default();
        let x = &self.axes[0];
        let corner = match self.axes.get(1) {
            Some(y) => format!("{} \\ {}", y.key, x.key),
            None => x.key.clone(),
        };
        b.push_record(std::iter::once(corner).chain(x.values.iter().cloned()));
        let rows: Vec<(String, Option<usize>)> = match self.axes.get(1) {
            Some(y) => y
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), Some(i)))
                .collect(),
            None => vec![(
                match self.measure {
                    Measure::Violations => format!("{} rate", self.property),
                    m => m.name().to_string(),
                },
                None,
            )],
        };
        for (label, yi) in rows {
            let rates = (0..x.values.len())
                .map(|xi| self.cell(xi, yi).map_or(String::new(), |c| self.label(c)));
            b.push_record(std::iter::once(label).chain(rates));
        }
        let mut t = b.build();
        t.with(Style::rounded());
        let showing = match self.measure {
            Measure::Violations => format!("{} violations", self.property),
            m => m.what().to_string(),
        };
        format!(
            "{} ({}): {showing} over {} seeds per cell (from seed {})\n{t}",
            self.scenario, self.file, self.seeds.count, self.seeds.from
        )
    }
}

/// `text` as XML character data or attribute value: the page's one escape function
/// ([`crate::escape::html`]), so SVG and HTML escape alike.
pub use crate::escape::html as escape;

/// A cell's rate as its label: at a glance ([`percent_at_a_glance`]).
fn percent_of(c: &Cell) -> String {
    percent_at_a_glance(c.invalid, c.runs)
}

/// The fill of a rate: ColorBrewer's YlOrRd from pale yellow (0) to dark red (1).
fn colour(rate: f64) -> String {
    along(
        &[
            (255, 255, 204),
            (254, 217, 118),
            (253, 141, 60),
            (227, 26, 28),
            (128, 0, 38),
        ],
        rate,
    )
}

/// The fill of a measured figure at `level` (0 to 1): ColorBrewer's Blues, from near white
/// to dark blue, so a figure's map never looks like a violation map.
fn blue(level: f64) -> String {
    along(
        &[
            (247, 251, 255),
            (198, 219, 239),
            (107, 174, 214),
            (33, 113, 181),
            (8, 48, 107),
        ],
        level,
    )
}

/// The colour at `t` (0 to 1, clamped; 0 when not finite) along evenly spaced `stops`, mixed
/// linearly between the two around it.
fn along(stops: &[(u8, u8, u8)], t: f64) -> String {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (stops.len() - 1) as f64;
    let i = (pos.floor() as usize).min(stops.len() - 2);
    let f = pos - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Text that reads on a cell of this rate.
fn ink(rate: f64) -> &'static str {
    if rate > 0.6 { "#ffffff" } else { "#000000" }
}

/// `text` cut to `max` characters, with an ellipsis when cut (before escaping).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

const FONT: &str = r#"font-family="sans-serif""#;

/// What a cell's tooltip says.
fn tooltip(map: &SweepMap, c: &Cell) -> String {
    let mut at = format!("{} = {}", map.axes[0].key, map.axes[0].values[c.x]);
    if let (Some(y), Some(yi)) = (map.axes.get(1), c.y) {
        let _ = write!(at, ", {} = {}", y.key, y.values[yi]);
    }
    let figure = match c.figures {
        None => String::new(),
        Some(f) => format!(
            "{} critical sections/s, {} of the clients' time waiting, acquire p99 {}; ",
            Measure::Throughput
                .label(f.throughput_per_s)
                .trim_end_matches("/s"),
            Measure::Waiting.label(f.waiting),
            f.acquire_p99_ms
                .map_or("none".to_string(), |ms| Measure::AcquireP99.label(ms))
        ),
    };
    format!(
        "{at}: {figure}{} of {} runs violate {} ({}; 95% interval {}); double holders {}, stale accepted {}, lost updates {}, unknown {}",
        c.invalid,
        c.runs,
        map.property,
        percent_of(c),
        interval(c.ci95),
        c.double_holders,
        c.stale_accepted,
        c.lost_updates,
        c.unknown
    )
}

/// The map drawn as SVG: with two axes a heat map (a cell per pair of values, coloured by
/// its violation rate, the rate written in it), with one a bar chart of the rate per value
/// with its 95% interval as whiskers; titles, axis keys and values, and a colour legend. Each
/// cell has a tooltip with its counts.
pub fn svg(map: &SweepMap) -> String {
    if map.axes.len() >= 2 {
        heat_map(map)
    } else {
        bar_chart(map)
    }
}

/// Width of a column for these labels, in pixels.
fn column_width(labels: &[String], min: usize) -> usize {
    let chars = labels
        .iter()
        .map(|l| clip(l, 20).chars().count())
        .max()
        .unwrap_or(0);
    (chars * 7 + 12).clamp(min, 160)
}

/// The subtitle under the scenario's name.
fn subtitle(map: &SweepMap) -> String {
    format!(
        "{}, {} seeds per cell from seed {} ({})",
        map.showing(),
        map.seeds.count,
        map.seeds.from,
        clip(&map.file, 60)
    )
}

/// The width the title and subtitle need (about 7 px a character at 12 px), so that the
/// drawing is at least `width` wide and they are not cut.
fn fit_header(map: &SweepMap, width: usize) -> usize {
    let chars = subtitle(map)
        .chars()
        .count()
        .max(clip(&map.scenario, 80).chars().count() * 9 / 7);
    width.max(chars * 7 + 24)
}

fn header(out: &mut String, map: &SweepMap, width: usize, height: usize) {
    let title = format!(
        "{}: {} over {} seeds per cell",
        map.scenario,
        map.showing(),
        map.seeds.count
    );
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" {FONT} font-size="12">"#
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&title));
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="12" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(&clip(&map.scenario, 80))
    );
    let _ = writeln!(
        out,
        r##"<text x="12" y="40" fill="#444444">{}</text>"##,
        escape(&subtitle(map))
    );
}

/// A vertical legend of the map's colour scale at `(x, y)`, `h` high: 0 at the bottom.
fn legend(out: &mut String, map: &SweepMap, x: usize, y: usize, h: usize) {
    const STEPS: usize = 20;
    let name = match map.measure {
        Measure::Violations => "rate",
        m => m.name(),
    };
    let _ = writeln!(
        out,
        r#"<text x="{x}" y="{}" font-size="11">{name}</text>"#,
        y - 8
    );
    for i in 0..STEPS {
        let rate = (STEPS - 1 - i) as f64 / (STEPS - 1) as f64;
        let top = y + i * h / STEPS;
        let bottom = y + (i + 1) * h / STEPS;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{top}" width="16" height="{}" fill="{}"/>"#,
            bottom - top,
            match map.measure {
                Measure::Violations => colour(rate),
                _ => blue(rate),
            }
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{x}" y="{y}" width="16" height="{h}" fill="none" stroke="#888888"/>"##
    );
    let top = map.top();
    for (level, at) in [(1.0, 0), (0.5, h / 2), (0.0, h)] {
        let label = match map.measure {
            Measure::Violations | Measure::Waiting => format!("{:.0}%", level * 100.0),
            m => m.label(level * top),
        };
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="11">{}</text>"#,
            x + 22,
            y + at + 4,
            escape(&label)
        );
    }
}

fn heat_map(map: &SweepMap) -> String {
    let (x, y) = (&map.axes[0], &map.axes[1]);
    let cw = column_width(&x.values, 56);
    let ch = 30;
    let y_label_w = column_width(&y.values, 40);
    let left = 36 + y_label_w;
    let top = 60;
    let grid_w = cw * x.values.len();
    let grid_h = ch * y.values.len();
    let width = fit_header(map, left + grid_w + 90);
    let height = top + grid_h + 56;
    let mut out = String::new();
    header(&mut out, map, width, height);
    // The cells: the first y value at the bottom, as on a plot.
    for c in &map.cells {
        let Some(yi) = c.y else { continue };
        let cx = left + c.x * cw;
        let cy = top + (y.values.len() - 1 - yi) * ch;
        let _ = writeln!(out, "<g>");
        let _ = writeln!(out, "<title>{}</title>", escape(&tooltip(map, c)));
        let _ = writeln!(
            out,
            r##"<rect x="{cx}" y="{cy}" width="{cw}" height="{ch}" fill="{}" stroke="#ffffff"/>"##,
            map.fill(c)
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" fill="{}">{}</text>"#,
            cx + cw / 2,
            cy + ch / 2 + 4,
            ink(map.level(c)),
            escape(&map.label(c))
        );
        let _ = writeln!(out, "</g>");
    }
    for (i, v) in x.values.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
            left + i * cw + cw / 2,
            top + grid_h + 16,
            escape(&clip(v, 20))
        );
    }
    for (i, v) in y.values.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end" font-size="11">{}</text>"#,
            left - 6,
            top + (y.values.len() - 1 - i) * ch + ch / 2 + 4,
            escape(&clip(v, 20))
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
        left + grid_w / 2,
        top + grid_h + 38,
        escape(&clip(&x.key, 60))
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-weight="bold">{}</text>"#,
        top + grid_h / 2,
        escape(&clip(&y.key, 40))
    );
    legend(
        &mut out,
        map,
        left + grid_w + 20,
        top + 10,
        grid_h.clamp(60, 240),
    );
    out.push_str("</svg>\n");
    out
}

fn bar_chart(map: &SweepMap) -> String {
    let x = &map.axes[0];
    let cw = column_width(&x.values, 44);
    let left = 64;
    // Room above the 100% line for a full bar's label.
    let top = 70;
    let plot_h = 200;
    let plot_w = cw * x.values.len();
    let width = fit_header(map, left + plot_w + 90);
    let height = top + plot_h + 56;
    let mut out = String::new();
    header(&mut out, map, width, height);
    let y_of = |rate: f64| top as f64 + (1.0 - rate.clamp(0.0, 1.0)) * plot_h as f64;
    let scale_top = map.top();
    for pct in [0, 25, 50, 75, 100] {
        let level = f64::from(pct) / 100.0;
        let gy = y_of(level);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{gy:.1}" x2="{}" y2="{gy:.1}" stroke="#dddddd"/>"##,
            left + plot_w
        );
        let label = match map.measure {
            Measure::Violations | Measure::Waiting => format!("{pct}%"),
            m => m.label(level * scale_top),
        };
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
            left - 6,
            gy + 4.0,
            escape(&label)
        );
    }
    for c in map.cells.iter().filter(|c| c.y.is_none()) {
        let cx = left + c.x * cw;
        let mid = cx + cw / 2;
        let bar_top = y_of(map.level(c));
        let _ = writeln!(out, "<g>");
        let _ = writeln!(out, "<title>{}</title>", escape(&tooltip(map, c)));
        let _ = writeln!(
            out,
            r##"<rect x="{}" y="{bar_top:.1}" width="{}" height="{:.1}" fill="{}" stroke="#888888"/>"##,
            cx + 6,
            cw - 12,
            (top + plot_h) as f64 - bar_top,
            map.fill(c)
        );
        // A rate has its 95% interval as whiskers; a measured figure is pooled over the
        // cell's runs and has none.
        let above = if map.measure.is_violations() {
            let (lo, hi) = (y_of(c.ci95.0), y_of(c.ci95.1));
            let _ = writeln!(
                out,
                r##"<path d="M{mid} {lo:.1}V{hi:.1}M{} {lo:.1}H{}M{} {hi:.1}H{}" stroke="#000000" fill="none"/>"##,
                mid - 5,
                mid + 5,
                mid - 5,
                mid + 5
            );
            hi
        } else {
            bar_top
        };
        let _ = writeln!(
            out,
            r#"<text x="{mid}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
            (above - 4.0).max(top as f64 - 2.0),
            escape(&map.label(c))
        );
        let _ = writeln!(out, "</g>");
    }
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="#000000"/>"##,
        top + plot_h,
        left + plot_w,
        top + plot_h
    );
    for (i, v) in x.values.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
            left + i * cw + cw / 2,
            top + plot_h + 16,
            escape(&clip(v, 20))
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
        left + plot_w / 2,
        top + plot_h + 38,
        escape(&clip(&x.key, 60))
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-weight="bold">{}</text>"#,
        top + plot_h / 2,
        escape(&clip(&map.showing(), 40))
    );
    legend(&mut out, map, left + plot_w + 20, top + 10, 180);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(two: bool) -> SweepMap {
        let axes = if two {
            vec![
                Axis {
                    name: "x".into(),
                    key: "model.ttl_ms".into(),
                    values: vec!["1000".into(), "2000".into()],
                },
                Axis {
                    name: "y".into(),
                    key: "fault[0].pause.for_ms".into(),
                    values: vec!["500".into(), "\"<&>\"".into()],
                },
            ]
        } else {
            vec![Axis {
                name: "x".into(),
                key: "clock[0].drift_ppm".into(),
                values: vec!["0".into(), "10000".into(), "20000".into()],
            }]
        };
        let ys: Vec<Option<usize>> = if two {
            vec![Some(0), Some(1)]
        } else {
            vec![None]
        };
        let mut cells = Vec::new();
        for y in ys {
            for x in 0..axes[0].values.len() {
                let invalid = (x as u64 * 7 + y.unwrap_or(0) as u64 * 3) % 11;
                cells.push(Cell {
                    x,
                    y,
                    runs: 10,
                    invalid: invalid.min(10),
                    unknown: 0,
                    rate: invalid.min(10) as f64 / 10.0,
                    ci95: (0.0, 0.5),
                    double_holders: invalid,
                    stale_accepted: 0,
                    lost_updates: 0,
                    digest: "0000000000000000".into(),
                    figures: None,
                });
            }
        }
        SweepMap {
            format: FORMAT.into(),
            scenario: "a <b> & 'c'".into(),
            file: "x\u{1}.toml".into(),
            property: Property::MutualExclusion,
            measure: Measure::Violations,
            seeds: MapSeeds { from: 1, count: 10 },
            axes,
            cells,
        }
    }

    /// `sample(two)` measuring throughput: cell `i` has `i` critical sections a second.
    fn throughput(two: bool) -> SweepMap {
        let mut map = sample(two);
        map.measure = Measure::Throughput;
        for (i, c) in map.cells.iter_mut().enumerate() {
            c.figures = Some(Figures {
                throughput_per_s: i as f64 * 12.5,
                waiting: i as f64 / 10.0,
                acquire_p99_ms: (i > 0).then_some(i as f64 * 100.0),
            });
        }
        map
    }

    #[test]
    fn a_violation_maps_json_does_not_name_a_measure() {
        let json = sample(true).json();
        assert!(
            !json.contains("measure") && !json.contains("figures"),
            "{json}"
        );
        let map = throughput(true);
        let json = map.json();
        assert!(json.contains("\"measure\": \"throughput\""), "{json}");
        assert_eq!(SweepMap::from_json(&json).unwrap(), map);
    }

    #[test]
    fn a_measured_map_labels_and_shades_its_figures() {
        let map = throughput(true);
        let t = map.table();
        assert!(
            t.contains("throughput (critical sections per simulated second)"),
            "{t}"
        );
        assert!(t.contains("37.5/s") && t.contains("0.00/s"), "{t}");
        assert!(!t.contains('%'), "{t}");
        let svg2 = svg(&map);
        assert!(svg2.contains(">37.5/s<"), "{svg2}");
        // The largest figure is the top of the scale: dark blue, and the legend's top.
        assert!(svg2.contains(&format!("fill=\"{}\"", blue(1.0))), "{svg2}");
        assert!(!svg2.contains(&colour(1.0)), "no violation colours: {svg2}");
        let bars = svg(&throughput(false));
        assert!(
            bars.contains(">25.0/s<") && !bars.contains("<path d="),
            "{bars}"
        );
        // The same runs, another measure: the share waiting, and the latency (none in
        // the first cell, which had no acquisition).
        let mut waiting = throughput(false);
        waiting.measure = Measure::Waiting;
        let t = waiting.table();
        assert!(t.contains("10%") && t.contains("20%"), "{t}");
        let mut p99 = throughput(false);
        p99.measure = Measure::AcquireP99;
        let t = p99.table();
        assert!(t.contains("200 ms") && t.contains('–'), "{t}");
        assert_eq!(Measure::AcquireP99.label(1_234.0), "1.2 s");
        assert_eq!(Measure::AcquireP99.label(87.0), "87 ms");
        assert_eq!(Measure::Waiting.label(0.085), "8.5%");
    }

    #[test]
    fn escape_replaces_markup_and_characters_xml_forbids() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(
            escape("a\u{0}b\u{1b}c\td\ne\u{FFFE}"),
            "a\u{FFFD}b\u{FFFD}c\td\ne\u{FFFD}"
        );
        assert_eq!(escape("plain é ✓"), "plain é ✓");
    }

    #[test]
    fn the_colour_scale_runs_from_pale_yellow_to_dark_red() {
        assert_eq!(colour(0.0), "#ffffcc");
        assert_eq!(colour(0.5), "#fd8d3c");
        assert_eq!(colour(1.0), "#800026");
        assert_eq!(colour(f64::NAN), "#ffffcc");
        assert_eq!(colour(7.0), "#800026");
    }

    #[test]
    fn svg_is_deterministic_and_escapes_user_text() {
        for two in [false, true] {
            let map = sample(two);
            let a = svg(&map);
            assert_eq!(a, svg(&map.clone()));
            assert!(a.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
            assert!(a.contains("a &lt;b&gt; &amp; &#39;c&#39;"), "{a}");
            assert!(!a.contains("<b>") && !a.contains('\u{1}'));
            assert!(!a.contains(" id="), "ids would clash when inlined twice");
            let cells = a.matches("<g>").count();
            assert_eq!(cells, map.cells.len());
        }
        assert!(svg(&sample(true)).contains("&quot;&lt;&amp;&gt;&quot;"));
    }

    #[test]
    fn json_round_trips_and_checks_its_format() {
        let map = sample(true);
        assert_eq!(SweepMap::from_json(&map.json()).unwrap(), map);
        let other = map.json().replace(FORMAT, "lockstep-sweep/1");
        assert!(
            SweepMap::from_json(&other)
                .unwrap_err()
                .contains("not a sweep map")
        );
    }

    #[test]
    fn the_table_has_a_row_per_y_value() {
        let t = sample(true).table();
        assert!(t.contains("fault[0].pause.for_ms \\ model.ttl_ms"), "{t}");
        assert!(t.contains("70%"), "{t}");
        let t = sample(false).table();
        assert!(t.contains("mutual-exclusion rate"), "{t}");
    }
}
