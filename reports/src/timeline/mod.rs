//! The timeline of one run as a self-contained inline SVG: true time across, a lane per
//! process with what each client believed it held, what the servers granted, the storage
//! operations, the faults, the overlaps of two holders, and each node's clock offset from true
//! time plotted beneath.
//!
//! [`Timeline`] (`model.rs`) is plain data in true-time nanoseconds;
//! [`Timeline::from_history`] fills what the history and the verdict tell (lanes, held
//! intervals, operations, overlaps), and the `lockstep` package adds what only the world knows
//! (lane kinds, faults with their ends, clocks, server grants). [`svg`] (`svg.rs`) draws it.
//! The drawing uses no fonts or links from outside, escapes every piece of text with
//! [`escape`], formats every number with a fixed precision (same data, same bytes), and merges
//! operation marks closer than a pixel, saying how many. Elements carry CSS classes (`held`,
//! `granted`, `op-accepted`, `op-rejected`, `op-stale`, `op-lost`, `overlap`, `fault-pause`,
//! ...) so tests and style sheets can find them.

mod model;
mod svg;

pub use model::{
    ClockPoint, ClockSeries, FaultMark, FaultSpan, Granted, Held, Lane, LaneKind, Op, OverlapSpan,
    Timeline,
};
pub use svg::svg;

/// `text` as XML character data or attribute value: the page's one escape function
/// ([`crate::escape::html`]), so SVG and HTML escape alike.
pub use crate::escape::html as escape;
